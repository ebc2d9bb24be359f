#!/usr/bin/env bash
# Every benchmark runs once, briefly, on sim and cpu, and reports no error.
set -euo pipefail
bin="$(dirname "$0")/tandem_benchmark"
out=$(TANDEM_BENCH_ROWS=70000 TANDEM_BENCH_PLACES=sim:0,cpu "$bin" \
      --benchmark_min_time=0.001 --benchmark_filter='dispatch|workload|copy/sim_H2D_pinned_sync/16$|embedding_cpu' 2>&1)
echo "$out"
if grep -q "ERROR OCCURRED" <<<"$out"; then echo "a benchmark failed"; exit 1; fi
for name in dispatch/cpu dispatch/sim workload2/slice_sim workload2/slice_cpu_with_sim \
            workload1/b4096/table_cpu_rest_sim workload1/b1/all_sim embedding_cpu/sparse_lookup_sgd_150d \
            embedding_cpu/full_step_150d; do
  grep -q "^$name" <<<"$out" || { echo "missing benchmark $name"; exit 1; }
done
