#!/usr/bin/env bash
# The automatic placement's measurements in one call: placement under memory
# budgets on the GPU (or sim:0 here), each run with --print_placement, then a
# summary table (budget, ops the auto pass put on the cpu, estimated vs
# measured peak of the device and of the host, estimated vs measured step
# time, the quality reached) ready for benchmarks/RESULTS.md.
#
#   (a) workload 1 (embedding_offload --is_sparse, batch 4096) with no
#       device_guard: --memory_budget_mb=4096 and no budget, and the
#       hand-placed program (table under device_guard("cpu")) whose losses
#       the 4096 MiB run must repeat;
#   (b) fashion_mnist MLP and CNN, and ctr with no device_guard, at budgets
#       none, 2048, 512, 64 and 8 MiB, and all on the device without
#       --auto_place (the reference quality);
#   (c) planning_benchmark (10,005 ops, with and without a budget).
#
#   tools/measure_placement.sh [--quick] [--place=gpu:0|sim:0] [--deadline=SECONDS]
#
# On the GPU machine after tools/gpu_bundle.sh here (device tool: carry
# [".bundle"]): bash tools/measure_placement.sh --deadline=280
# Here: bazel build //examples/... //benchmarks:planning_benchmark && tools/measure_placement.sh --quick
# --quick: small tables, few steps and examples (tests the script). Each run
# is cut off by `timeout` so that the whole call stays within --deadline
# (default 300 s); a run cut off or failed shows as FAILED. Raw outputs go to
# $OUT/placement/ ($OUT defaults to /tmp/measure_placement). Binaries: the
# bundle's where a GPU is visible, else bazel-bin/.
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0; place=""; deadline=300
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --place=*) place="${arg#--place=}" ;;
    --deadline=*) deadline="${arg#--deadline=}" ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "measure_placement: unknown argument '$arg' (--help lists them)" >&2; exit 2 ;;
  esac
done
if [[ -f .bundle/tandem.tar.xz ]] && nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
  source tools/gpu_env.sh
  bin() { echo "/tmp/tandem/bin/${1//\//_}"; }
else
  bin() { echo "bazel-bin/$1"; }
fi
emb=$(bin examples/embedding_offload/embedding_offload)
fmnist=$(bin examples/fashion_mnist/fashion_mnist)
ctr=$(bin examples/ctr/ctr)
plan=$(bin benchmarks/planning_benchmark)
for b in "$emb" "$fmnist" "$ctr" "$plan"; do
  [[ -x "$b" ]] || { echo "measure_placement: $b is missing" >&2; exit 1; }
done
if [[ -z "$place" ]]; then
  place=sim:0
  if nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then place=gpu:0; fi
fi
out="${OUT:-/tmp/measure_placement}/placement"
mkdir -p "$out"
end=$(( $(date +%s) + deadline ))

if ((quick)); then
  rows=200000; emb_steps=10; fm="--epochs=1 --train_examples=3200 --test_examples=1000"
  fm_cnn="$fm"; ctr_args="--steps=200 --vocab_sizes=1000,2000,5000 --eval_examples=2000 --eval_every=200"
else
  rows=10000000; emb_steps=50; fm="--epochs=2"
  fm_cnn="--epochs=1 --train_examples=20000"
  ctr_args="--steps=2000 --eval_every=2000 --log_every=1000"
fi

# run NAME SECONDS BINARY ARGS...: one run, its output in $out/NAME.log.
run() {
  local name=$1 limit=$2; shift 2
  local left=$(( end - $(date +%s) ))
  (( limit > left )) && limit=$left
  if (( limit <= 5 )); then echo "SKIPPED (deadline)" > "$out/$name.log"; return; fi
  timeout "$limit" "$@" > "$out/$name.log" 2>&1 || echo "FAILED (exit $?)" >> "$out/$name.log"
  echo "== $name: $(tail -1 "$out/$name.log" | cut -c1-160)"
}
budget_args() { [[ "$1" == none ]] && echo "--auto_place" || echo "--auto_place --memory_budget_mb=$1"; }

emb_common="--place=$place --rows=$rows --is_sparse --batch_size=4096 --steps=$emb_steps --log_every=10"
run w1_hand 90 "$emb" $emb_common
run w1_auto_4096 90 "$emb" $emb_common --no_guard --auto_place --memory_budget_mb=4096 --print_placement
run w1_auto_none 90 "$emb" $emb_common --no_guard --auto_place --print_placement
for b in all none 2048 512 64 8; do
  args=$([[ $b == all ]] && echo "" || budget_args "$b")
  run "mlp_$b" 40 "$fmnist" --place="$place" $fm $args --print_placement
  run "cnn_$b" 60 "$fmnist" --place="$place" --model=cnn $fm_cnn $args --print_placement
  run "ctr_$b" 40 "$ctr" --place="$place" --no_guard $ctr_args $args --print_placement
done
run planning 60 "$plan" --benchmark_min_time=0.2

# The summary: one row per run.
field() { grep -m1 -oE "$2" "$out/$1.log" | head -1; }
{
  echo "| run | on cpu (auto) | device est./measured peak | host est./measured peak | step est./measured | quality |"
  echo "|---|---|---|---|---|---|"
  for log in "$out"/*.log; do
    n=$(basename "$log" .log)
    [[ $n == planning ]] && continue
    oncpu=$(field "$n" '[0-9]+ of [0-9]+ unpinned ops on cpu')
    mem=$(grep -m1 -E '^memory( \(two runs in flight\))?:' "$log")
    dev=$(echo "$mem" | grep -oE "${place%%:*}:[0-9]+ est\. peak [0-9]+ bytes \([^)]*\), measured [0-9]+ bytes \([^)]*\)" |
          sed -E 's/.*\(([^)]*)\), measured [0-9]+ bytes \(([^)]*)\)/\1 \/ \2/')
    host=$(echo "$mem" | grep -oE "cpu est\. peak [0-9]+ bytes \([^)]*\), measured [0-9]+ bytes \([^)]*\)" |
           sed -E 's/.*\(([^)]*)\), measured [0-9]+ bytes \(([^)]*)\)/\1 \/ \2/')
    step=$(echo "$mem" | grep -oE 'step est\. [0-9]+ us, measured [0-9]+ us' | sed -E 's/step est\. ([0-9]+) us, measured ([0-9]+) us/\1 \/ \2 us/')
    quality=$(grep -oE 'final test accuracy [0-9.]+|held-out AUC [0-9.]+ -> [0-9.]+|loss [0-9.]+ -> [0-9.]+' "$log" | tail -1)
    status=$(grep -qE '^(FAILED|SKIPPED)' "$log" && grep -m1 -E '^(FAILED|SKIPPED)' "$log")
    echo "| $n | ${oncpu:--} | ${dev:--} | ${host:--} | ${step:--} | ${quality:--} ${status:-} |"
  done
  echo
  echo "workload 1 losses, hand-placed vs auto at 4096 MiB (equal when the auto pass keeps the table on the cpu):"
  diff <(grep -oE '^step +[0-9]+ +loss [0-9.]+' "$out/w1_hand.log") \
       <(grep -oE '^step +[0-9]+ +loss [0-9.]+' "$out/w1_auto_4096.log") > /dev/null &&
    echo "  identical" || echo "  DIFFERENT (see $out/w1_hand.log, $out/w1_auto_4096.log)"
  echo "placement of workload 1's table ops at 4096 MiB:"
  grep -E '^[0-9]+ +(lookup_table|lookup_table_grad|sgd) ' "$out/w1_auto_4096.log" | sed 's/^/  /' | cut -c1-150
  echo "planning_benchmark:"
  grep -E '^planning/' "$out/planning.log" | sed 's/^/  /'
} | tee "$out/summary.md"
