#!/usr/bin/env bash
# The offloaded GPT step against its physical bound, in one call: the GPT
# trainer all on the device and with --offload=optimizer (median step
# times), then benchmarks/offload_bound with both (the host's memory
# bandwidth and the pinned copy bandwidth, measured, as the CPU AdamW and
# transfer terms; the bound is the largest term), then the host kernels of
# the offloaded optimizer alone (cpu_kernels_benchmark: adam with its clip
# factor, the casts, squared_l2_norm, memcpy; skipped where not built), to
# set beside their share of the offloaded step in its profile.
#
#   tools/offload_bound.sh [--size=gpt2] [--batch_size=8] [--steps=20] [--place=gpu:0]
#                          [--bazel_bin] [-- extra trainer flags]
#
# On the GPU machine, after tools/gpu_bundle.sh here (device tool: carry
# [".bundle"]): bash tools/offload_bound.sh --batch_size=8
# Here, without a GPU, on sim:0 with a small model (times are not a GPU's):
#   bazel build //examples/gpt //benchmarks:offload_bound &&
#   tools/offload_bound.sh --size=tiny --steps=6 --place=sim:0
# Binaries: the bundle's (/tmp/tandem/bin, via tools/gpu_env.sh) when
# .bundle/tandem.tar.xz exists, else bazel-bin/ (--bazel_bin forces it).
# With --size=gpt2 and PyTorch importable, the PyTorch peer of the same model
# (benchmarks/peers/torch_gpt.py, all-GPU autocast and the overlapped
# CPU-offload recipe) runs last at the same batch, with its practicality.
# Raw outputs go to $OUT/offload_bound/ ($OUT defaults to /tmp/offload_bound).
set -uo pipefail
cd "$(dirname "$0")/.."

size=gpt2; batch=8; steps=20; place=""; bazel_bin=0; extra=()
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size=*) size="${1#--size=}" ;;
    --batch_size=*) batch="${1#--batch_size=}" ;;
    --steps=*) steps="${1#--steps=}" ;;
    --place=*) place="${1#--place=}" ;;
    --bazel_bin) bazel_bin=1 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "offload_bound: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done

if [[ -f .bundle/tandem.tar.xz && $bazel_bin == 0 ]]; then
  source tools/gpu_env.sh
  gpt=/tmp/tandem/bin/examples_gpt_gpt
  bound=/tmp/tandem/bin/benchmarks_offload_bound
  host_kernels=/tmp/tandem/bin/backends_cpu_cpu_kernels_benchmark
else
  gpt=bazel-bin/examples/gpt/gpt
  bound=bazel-bin/benchmarks/offload_bound
  host_kernels=bazel-bin/backends/cpu/cpu_kernels_benchmark
fi
for b in "$gpt" "$bound"; do
  [[ -x "$b" ]] || { echo "offload_bound: $b is missing: run tools/gpu_bundle.sh or" \
    "bazel build //examples/gpt //benchmarks:offload_bound" >&2; exit 1; }
done
if [[ -z "$place" ]]; then
  nvidia-smi -L 2>/dev/null | grep -q "^GPU" && place=gpu:0 || place=sim:0
fi
out="${OUT:-/tmp/offload_bound}/offload_bound"
mkdir -p "$out"

median_ms() { grep -oP '^step time: median \K[0-9.]+' "$1"; }
common=(--place="$place" --size="$size" --amp=bf16 --batch_size="$batch" --steps="$steps"
        --log_every=10 --eval_every=100000 --eval_batches=1 "${extra[@]}")
for mode in none optimizer; do
  echo "== gpt --offload=$mode ${common[*]}"
  "$gpt" "${common[@]}" --offload="$mode" > "$out/gpt_$mode.txt" 2>&1 ||
    { cat "$out/gpt_$mode.txt"; echo "offload_bound: the $mode run failed" >&2; exit 1; }
  grep -E "^(step [0-9]+/|step time|memory)" "$out/gpt_$mode.txt"
done
all_gpu=$(median_ms "$out/gpt_none.txt"); offload=$(median_ms "$out/gpt_optimizer.txt")
[[ -n "$all_gpu" && -n "$offload" ]] || { echo "offload_bound: no step time in the runs" >&2; exit 1; }
echo "== offload_bound"
"$bound" --size="$size" --place="$place" --all_gpu_ms="$all_gpu" --offload_ms="$offload" |
  tee "$out/bound.txt"
if [[ -x "$host_kernels" ]]; then
  echo "== host kernels of the offloaded optimizer (cpu_kernels_benchmark, GPT-2 shape's parameters)"
  "$host_kernels" --benchmark_filter='HostMemcpy|AdamClipped|Cast|SquaredL2Norm' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 |
    grep -E "_median" | tee "$out/host_kernels.txt"
fi
if [[ "$size" == gpt2 ]] && python3 -c "import torch" 2>/dev/null; then
  echo "== PyTorch peer (benchmarks/peers/torch_gpt.py --batch $batch --amp bf16)"
  peer_us() { grep -oP '^METRIC \S+ \K[0-9.e+]+' <<<"$1"; }
  torch_gpu=$(timeout 120 python3 benchmarks/peers/torch_gpt.py --batch "$batch" --amp bf16 --steps 10 2>&1 | tail -1)
  torch_off=$(timeout 180 python3 benchmarks/peers/torch_gpt.py --batch "$batch" --amp bf16 --offload --steps 5 2>&1 | tail -1)
  echo "$torch_gpu"; echo "$torch_off"
  if [[ -n "$(peer_us "$torch_gpu")" && -n "$(peer_us "$torch_off")" ]]; then
    awk -v a="$(peer_us "$torch_gpu")" -v b="$(peer_us "$torch_off")" -v t="$all_gpu" -v o="$offload" \
      'BEGIN { printf "practicality: Tandem %.2f, PyTorch %.2f\n", t / o, a / b }'
  fi
fi
