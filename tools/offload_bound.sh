#!/usr/bin/env bash
# The offloaded GPT step against its physical bound, in one call: the GPT
# trainer all on the device and with --offload=optimizer (median step
# times), then benchmarks/offload_bound with both (the host's memory
# bandwidth and the pinned copy bandwidth, measured, as the CPU AdamW and
# transfer terms; the bound is the largest term).
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
else
  gpt=bazel-bin/examples/gpt/gpt
  bound=bazel-bin/benchmarks/offload_bound
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
