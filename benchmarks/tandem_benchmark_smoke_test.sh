#!/usr/bin/env bash
# Every benchmark runs once, briefly, on sim and cpu, and reports no error;
# the context says the executor mode (--in_order: in-order).
set -euo pipefail
bin="$(dirname "$0")/tandem_benchmark"
out=$(TANDEM_BENCH_ROWS=70000 TANDEM_BENCH_MLP_BATCH=8 TANDEM_BENCH_NUMERICS_BATCH=8 TANDEM_BENCH_PLACES=sim:0,cpu "$bin" \
      --benchmark_min_time=0.001 --benchmark_filter='dispatch|device_guard|workload|check_numerics|copy/sim_H2D_pinned_sync/16$|embedding_cpu|mlp|sgemm|overlap/cpu_|collective/sim2_' 2>&1)
echo "$out"
if grep -q "ERROR OCCURRED" <<<"$out"; then echo "a benchmark failed"; exit 1; fi
for name in dispatch/cpu dispatch/sim device_guard/sim workload2/slice_sim workload2/slice_cpu_with_sim \
            workload1/b4096/table_cpu_rest_sim workload1/b1/all_sim embedding_cpu/sparse_lookup_sgd_150d \
            embedding_cpu/full_step_150d mlp_cpu/4x1024_b8_step mlp_sim/4x1024_b8_step \
            sgemm_cpu/8x1024x1024 sgemm_sim/8x1024x1024 overlap/cpu_sim_branches/real_time \
            overlap/cpu_sim_branches_in_order/real_time check_numerics_cpu/mlp4x512_b8/off \
            check_numerics_cpu/mlp4x512_b8/off_in_order check_numerics_cpu/mlp4x512_b8/on \
            data_parallel/mlp_simx1/4x1024_b8_per_replica data_parallel/mlp_simx2/4x1024_b8_per_replica \
            collective/sim2_allreduce_64MiB collective/sim2_allreduce_256MiB; do
  grep -q "^$name" <<<"$out" || { echo "missing benchmark $name"; exit 1; }
done
grep -q "^executor: concurrent$" <<<"$out" || { echo "no 'executor: concurrent' context"; exit 1; }
out=$(TANDEM_BENCH_PLACES=sim:0 "$bin" --in_order --benchmark_min_time=0.001 \
      --benchmark_filter='dispatch/sim$' 2>&1)
echo "$out"
grep -q "^executor: in-order$" <<<"$out" || { echo "no 'executor: in-order' context"; exit 1; }
grep -q "^dispatch/sim " <<<"$out" || { echo "dispatch/sim missing with --in_order"; exit 1; }
help=$("$bin" --help 2>&1 || true)
grep -q -- "-in_order (Run every row's executor in-order" <<<"$help" || { echo "--help lacks --in_order"; exit 1; }
