#!/usr/bin/env bash
# Every planning row runs once, on a 50-layer program, and reports no error.
set -euo pipefail
bin="$(dirname "$0")/planning_benchmark"
out=$(TANDEM_BENCH_PLANNING_LAYERS=50 "$bin" --benchmark_min_time=0.001 2>&1)
echo "$out"
if grep -q "ERROR OCCURRED" <<<"$out"; then echo "a benchmark failed"; exit 1; fi
for name in rules auto_analytical auto_measured_warm_cache auto_analytical_half_the_parameters_fit; do
  grep -q "^planning/10000_ops/$name " <<<"$out" || { echo "missing row $name"; exit 1; }
done
# Half the parameters' bytes as the budget: the auto pass moves ops to the cpu.
grep -E "^planning/10000_ops/auto_analytical_half_the_parameters_fit .*ops_on_cpu=[1-9]" \
  <<<"$out" >/dev/null || { echo "the half budget moved nothing to the cpu"; exit 1; }
