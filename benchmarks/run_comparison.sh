#!/usr/bin/env bash
# On the GPU machine (after tools/gpu_bundle.sh here; the device tool
# carries .bundle): runs tandem_benchmark and the PyTorch and JAX peers in
# the same call and writes $OUT/comparison.md (plus the raw outputs).
#
#   bash benchmarks/run_comparison.sh [--quick] [--rows N]
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_env.sh
out="${OUT:-/tmp}"
rows=10000000; quick=""; reps=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick="--quick"; reps=2; shift ;;
    --rows) rows="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
TANDEM_BENCH_ROWS=$rows TANDEM_BENCH_PLACES=gpu:0,cpu /tmp/tandem/bin/benchmarks_tandem_benchmark \
  --benchmark_repetitions=$reps --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/ours.json" --benchmark_out_format=json 2>&1 | tail -n 60
PYTHONUNBUFFERED=1 python3 benchmarks/peers/torch_bench.py --rows "$rows" $quick 2>&1 | tee "$out/torch.txt"
PYTHONUNBUFFERED=1 python3 benchmarks/peers/jax_bench.py --rows "$rows" $quick 2>&1 | tee "$out/jax.txt"
python3 benchmarks/compare.py --ours "$out/ours.json" --peer torch="$out/torch.txt" \
  --peer jax="$out/jax.txt" | tee "$out/comparison.md"
