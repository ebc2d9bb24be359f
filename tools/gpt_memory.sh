#!/usr/bin/env bash
# The GPT trainer's device memory and step time with and without activation
# recomputation, all on the device and with the optimizer offloaded, in one
# call: one run per --recompute (none, cheap, cheap+weights) x --offload
# (none, optimizer), then a table of the median step time, the plan's
# estimated device peak and the allocator's measured one, each peak as a
# share of the all-device run without recomputation, and practicality
# (that run's step time / this one's). With --size=gpt2 and PyTorch
# importable, the PyTorch peer (benchmarks/peers/torch_gpt.py) of the same
# model runs last, all on the GPU and offloaded, with its peak memory.
#
#   tools/gpt_memory.sh [--size=gpt2] [--batch_size=8] [--steps=12] [--place=gpu:0]
#                       [--bazel_bin] [-- extra trainer flags]
#
# On the GPU machine, after tools/gpu_bundle.sh here (device tool: carry
# [".bundle"]): bash tools/gpt_memory.sh --batch_size=8
# Here, on sim:0 with a small model (times are not a GPU's):
#   bazel build //examples/gpt && tools/gpt_memory.sh --size=tiny --steps=6
# Binaries: the bundle's (/tmp/tandem/bin, via tools/gpu_env.sh) when
# .bundle/tandem.tar.xz exists, else bazel-bin/ (--bazel_bin forces it).
# Raw outputs go to $OUT/gpt_memory/ ($OUT defaults to /tmp).
set -uo pipefail
cd "$(dirname "$0")/.."

size=gpt2; batch=8; steps=12; place=""; bazel_bin=0; extra=()
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
    *) echo "gpt_memory: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done
if (( steps < 4 )); then echo "gpt_memory: --steps must be >= 4 (a median from step 3 on)" >&2; exit 2; fi

if [[ -f .bundle/tandem.tar.xz && $bazel_bin == 0 ]]; then
  source tools/gpu_env.sh
  gpt=/tmp/tandem/bin/examples_gpt_gpt
else
  gpt=bazel-bin/examples/gpt/gpt
fi
[[ -x "$gpt" ]] || { echo "gpt_memory: $gpt is missing: run tools/gpu_bundle.sh or" \
  "bazel build //examples/gpt" >&2; exit 1; }
if [[ -z "$place" ]]; then
  nvidia-smi -L 2>/dev/null | grep -q "^GPU" && place=gpu:0 || place=sim:0
fi
out="${OUT:-/tmp}/gpt_memory"
mkdir -p "$out"

common=(--place="$place" --size="$size" --amp=bf16 --batch_size="$batch" --steps="$steps"
        --log_every=100000 --eval_every=100000 --eval_batches=1 "${extra[@]}")
# "<median ms> <estimated bytes> <measured bytes>" of one run's output.
figures() {
  local ms est measured
  ms=$(grep -oP '^step time: median \K[0-9.]+' "$1")
  est=$(grep -oP "$place est\\. peak \\K[0-9]+" "$1" | head -1)
  measured=$(grep -oP "$place est\\. peak [0-9]+ bytes \\([^)]*\\), measured \\K[0-9]+" "$1" | head -1)
  echo "${ms:-?} ${est:-?} ${measured:-?}"
}
rows=()
for recompute in none cheap cheap+weights; do
  for offload in none optimizer; do
    name="${recompute/+/_}_$offload"
    echo "== gpt --recompute=$recompute --offload=$offload ${common[*]}"
    if ! "$gpt" "${common[@]}" --recompute="$recompute" --offload="$offload" > "$out/$name.txt" 2>&1; then
      tail -5 "$out/$name.txt"; echo "gpt_memory: the run failed" >&2; exit 1
    fi
    grep -E "^(step time|memory)" "$out/$name.txt"
    rows+=("$recompute $offload $(figures "$out/$name.txt")")
  done
done
echo
echo "| --recompute | --offload | step ms | est. peak | measured peak | measured / all-device none | practicality |"
echo "|---|---|---|---|---|---|---|"
read -r _ _ base_ms _ base_measured <<< "${rows[0]}"
for row in "${rows[@]}"; do
  read -r recompute offload ms est measured <<< "$row"
  awk -v r="$recompute" -v o="$offload" -v ms="$ms" -v e="$est" -v m="$measured" \
      -v bm="$base_measured" -v bms="$base_ms" 'BEGIN {
    mib = 1024 * 1024
    printf "| %s | %s | %s | %.1f MiB | %.1f MiB | %.3f | %.2f |\n", r, o, ms, e / mib, m / mib,
           m / bm, bms / ms }'
done
if [[ "$size" == gpt2 ]] && python3 -c "import torch" 2>/dev/null; then
  for flags in "" "--offload"; do
    echo "== PyTorch peer (benchmarks/peers/torch_gpt.py --batch $batch --amp bf16 $flags)"
    timeout 180 python3 benchmarks/peers/torch_gpt.py --batch "$batch" --amp bf16 $flags \
      --steps 5 2>&1 | tail -2
  done
fi
