#!/usr/bin/env bash
# On a CPU-only machine (e.g. a developer's): tandem_benchmark's CPU rows
# (TANDEM_BENCH_PLACES=cpu) and the Paddle CPU peer in the same call, then
# benchmarks/compare.py's table in $OUT/comparison_cpu.md (default OUT:
# /tmp/tandem_cpu_comparison; raw outputs beside it). PyTorch is not run:
# torch_bench.py needs a GPU (run_comparison.sh runs it on the GPU machine).
#
# Once, from the repository root (the venv is git-ignored via
# .git/info/exclude: `/.venv-peers/`; never part of the Bazel build):
#   python3 -m venv .venv-peers && .venv-peers/bin/pip install paddlepaddle
# Then:
#   bash benchmarks/run_cpu_comparison.sh [--quick] [--rows N] [--mlp-batch B]
#
# --rows: embedding table rows (default 1000000); --mlp-batch: batch of the
# mlp and sgemm rows (default 256; the GPU table uses 4096); --quick: two
# repetitions and few peer iterations (a smoke run).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/tandem_cpu_comparison}"
rows=1000000; mlp_batch=256; quick=""; reps=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick="--quick"; reps=2; shift ;;
    --rows) rows="$2"; shift 2 ;;
    --mlp-batch) mlp_batch="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
py=.venv-peers/bin/python3
if ! "$py" -c "import paddle" 2>/dev/null; then
  echo "no Paddle in .venv-peers; set it up with:" >&2
  echo "  python3 -m venv .venv-peers && .venv-peers/bin/pip install paddlepaddle" >&2
  exit 1
fi
mkdir -p "$out"
echo "# $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
bazel build //benchmarks:tandem_benchmark || exit 1
TANDEM_BENCH_PLACES=cpu TANDEM_BENCH_ROWS=$rows TANDEM_BENCH_MLP_BATCH=$mlp_batch \
  bazel-bin/benchmarks/tandem_benchmark --benchmark_filter='dispatch/cpu|embedding_cpu|mlp_cpu|sgemm_cpu' \
  --benchmark_repetitions=$reps --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/ours.json" --benchmark_out_format=json 2>&1 | tail -n 30
PYTHONUNBUFFERED=1 "$py" benchmarks/peers/paddle_bench.py --rows "$rows" --mlp-batch "$mlp_batch" \
  $quick 2>&1 | tee "$out/paddle.txt"
python3 benchmarks/compare.py --ours "$out/ours.json" --peer paddle="$out/paddle.txt" \
  | tee "$out/comparison_cpu.md"
