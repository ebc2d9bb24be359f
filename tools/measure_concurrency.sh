#!/usr/bin/env bash
# The concurrent executor's measurements in one call: every run both with
# the concurrent executor (the default) and with --in_order, then a compact
# summary.
#
#   (a) ctr, 3000 steps of 512: examples/s all on the device (--no_guard)
#       and mixed (tables under device_guard("cpu"), the default);
#   (b) fashion_mnist MLP, 2 epochs: s/epoch (epoch 2's training time) all
#       on the device and with --first_layer_on_cpu;
#   (c) tandem_benchmark rows workload1/b4096/* (TANDEM_BENCH_ROWS=10000000),
#       dispatch/* (dispatch/gpu_graph is the graph replay row) and
#       overlap/cpu_<device>_branches*, 3 repetitions, medians;
#   (d) practicality = all-device time / mixed time for ctr, fashion_mnist
#       and workload1 (1: the mixed placement is as fast as all on the device);
#   (e) the schedule trial's choice in each default-mode run (the executor's
#       log: "a plan of N steps runs in order: 0.61 vs 0.68 ms per run ..."),
#       printed first, so that the figures end the output.
#   --graphs: ctr (a) and workload1 (c) once more with graph capture
#       (--cuda_graph: each segment of device work one launch), a third
#       column, and ctr's launches per step.
#
#   --rounds=N (default 3): every run above N times, the two modes
#       alternating which goes first; the summary gives each figure's median
#       over the rounds and its spread (min-max). One process of the same
#       binary and flags varies by up to 10-20% from the next on the GPU
#       host (workload1/b4096/all_gpu: 132 to 159 us in four processes, two
#       per mode, 2026-12-06), so one run per mode cannot tell a 3% loss.
#
#   tools/measure_concurrency.sh [--quick] [--graphs] [--rounds=N] [--place=gpu:0|sim:0]
#                                [--deadline=SECONDS] [--cpu_threads=N] [--bazel_bin]
#
# On the GPU machine, after tools/gpu_bundle.sh here (device tool: carry
# [".bundle"]; about 100 s a round with --graphs on the H100 host with 16
# cores, most of it workload1's 10M-row table set-ups; --deadline caps it):
#   bash tools/measure_concurrency.sh --graphs --deadline=540
# Here, without a GPU, on sim:0 (and cpu), briefly:
#   bazel build //examples/... //benchmarks:tandem_benchmark && tools/measure_concurrency.sh --quick
#
# Binaries: the bundle's (/tmp/tandem/bin, via tools/gpu_env.sh) when
# .bundle/tandem.tar.xz exists, else bazel-bin/ (--bazel_bin forces it).
# Place: gpu:0 when nvidia-smi lists a GPU, else sim:0 (said in the output:
# sim work runs synchronously on the host, so its times are not a GPU's).
# --cpu_threads=N caps the cpu backend's threads in every run (default: the
# backend's own sizing; 1 on sim with fewer than 8 cores, where a busy
# machine stalls OpenMP teams at their barriers by whole time slices).
# --quick: small runs (ctr 200 steps on small tables, fashion_mnist 2 epochs
# of 3200 examples, TANDEM_BENCH_ROWS=70000, short benchmark times) to test
# the script. Each run is cut off by `timeout` so that the whole call stays
# within --deadline (default 450 s); a run cut off or failed shows as FAILED
# in the summary. Raw outputs go to $OUT/concurrency/ ($OUT defaults to
# /tmp/measure_concurrency), the summary to stdout and
# $OUT/concurrency/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0; place=""; deadline=450; bazel_bin=0; threads=""; graphs=0; rounds=3
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --graphs) graphs=1 ;;
    --place=*) place="${arg#--place=}" ;;
    --deadline=*) deadline="${arg#--deadline=}" ;;
    --rounds=*) rounds="${arg#--rounds=}" ;;
    --cpu_threads=*) threads="${arg#--cpu_threads=}" ;;
    --bazel_bin) bazel_bin=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "measure_concurrency: unknown argument '$arg' (--help lists them)" >&2; exit 2 ;;
  esac
done
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "measure_concurrency: --rounds must be a positive integer, not '$rounds'" >&2; exit 2
fi

if [[ -f .bundle/tandem.tar.xz && $bazel_bin == 0 ]]; then
  source tools/gpu_env.sh
  ctr=/tmp/tandem/bin/examples_ctr_ctr
  fmnist=/tmp/tandem/bin/examples_fashion_mnist_fashion_mnist
  bench=/tmp/tandem/bin/benchmarks_tandem_benchmark
else
  ctr=bazel-bin/examples/ctr/ctr
  fmnist=bazel-bin/examples/fashion_mnist/fashion_mnist
  bench=bazel-bin/benchmarks/tandem_benchmark
fi
for b in "$ctr" "$fmnist" "$bench"; do
  [[ -x "$b" ]] || { echo "measure_concurrency: $b is missing: run tools/gpu_bundle.sh or" \
    "bazel build //examples/... //benchmarks:tandem_benchmark" >&2; exit 1; }
done

if [[ -z "$place" ]]; then
  if nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    place=gpu:0
  else
    place=sim:0
    echo "measure_concurrency: no GPU visible (nvidia-smi): measuring on sim:0 and cpu; sim" \
         "work runs synchronously on the host, so these are not a GPU's timings"
  fi
fi
dev=${place%%:*}
if [[ -z "$threads" ]]; then
  threads=0; [[ $dev != gpu ]] && (( $(nproc) < 8 )) && threads=1
fi
# The executor's log (its schedule trial's choices among it) goes into each
# run's output, where the summary reads it.
export GLOG_logtostderr=1
dir="${OUT:-/tmp/measure_concurrency}/concurrency"
rm -rf "$dir" && mkdir -p "$dir"
start=$(date +%s)

# run NAME LIMIT_S COMMAND...: runs COMMAND (stdout and stderr to NAME.txt)
# under a timeout of LIMIT_S, less if the deadline is nearer; one line per run.
run() {
  local name=$1 limit=$2; shift 2
  local left=$(( deadline - ($(date +%s) - start) ))
  (( limit > left )) && limit=$left
  if (( limit < 5 )); then
    echo "SKIPPED: deadline of ${deadline}s reached" > "$dir/$name.txt"
    printf '%-28s skipped (deadline)\n' "$name"; return
  fi
  local t0=$(date +%s%N)
  timeout --kill-after=5 "$limit" "$@" > "$dir/$name.txt" 2>&1
  local rc=$?
  echo "exit status $rc" >> "$dir/$name.txt"
  printf '%-28s exit %3d in %6.1f s\n' "$name" "$rc" "$(( ($(date +%s%N) - t0) / 1000000 ))e-3"
}

if (( quick )); then
  ctr_flags=(--steps=200 --log_every=100 --eval_every=200 --eval_examples=2000
             --vocab_sizes=1000,2000,5000,10000)
  fm_flags=(--epochs=2 --train_examples=3200 --test_examples=1000 --log_every=25)
  rows=70000; bench_time=(--benchmark_min_time=0.01)
else
  ctr_flags=(--steps=3000 --log_every=1000 --eval_every=3000)
  fm_flags=(--epochs=2 --log_every=200)
  rows=10000000; bench_time=()
fi

{
  echo "place $place, quick $quick, rounds $rounds, $(nproc) cores, --cpu_threads=$threads, $(date -u +%FT%TZ)"
  echo "binaries: $ctr $fmnist $bench"
  git rev-parse --short HEAD 2>/dev/null | sed 's/^/commit /'
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
} > "$dir/machine.txt"
cat "$dir/machine.txt"

# mode_flags MODE: the executor flags of a mode (graph: --cuda_graph).
mode_flags() {
  m=(--cpu_threads="$threads")
  [[ $1 == in_order ]] && m+=(--in_order)
  [[ $1 == graph ]] && m+=(--cuda_graph)
}
# modes_of ROUND [graph]: concurrent and in-order, the first alternating with
# the round (even rounds in-order first), then graph when asked.
modes_of() {
  if (( $1 % 2 )); then modes=(concurrent in_order); else modes=(in_order concurrent); fi
  [[ ${2:-} == graph ]] && (( graphs )) && modes+=(graph)
}
for (( round = 1; round <= rounds; round++ )); do
  r=".r$round"
  modes_of "$round" graph
  for mode in "${modes[@]}"; do
    mode_flags "$mode"
    run "ctr_all_$mode$r" 90 "$ctr" --place="$place" --no_guard "${ctr_flags[@]}" "${m[@]}"
    run "ctr_mixed_$mode$r" 90 "$ctr" --place="$place" "${ctr_flags[@]}" "${m[@]}"
  done
  modes_of "$round"
  for mode in "${modes[@]}"; do
    mode_flags "$mode"
    run "fmnist_all_$mode$r" 90 "$fmnist" --place="$place" "${fm_flags[@]}" "${m[@]}"
    run "fmnist_mixed_$mode$r" 90 "$fmnist" --place="$place" --first_layer_on_cpu "${fm_flags[@]}" \
        "${m[@]}"
  done
  # Two groups, each run in both modes back to back, so that the pairs are
  # measured minutes apart at most (this VM's host-bound rows drift between
  # invocations; see benchmarks/RESULTS.md).
  for group in workload1 dispatch_overlap; do
    # workload1: Google Benchmark sets each row up again for every trial of
    # every repetition (~15 set-ups of the 10M-row table per row and mode).
    filter='^workload1/b4096/'; limit=180
    [[ $group == dispatch_overlap ]] && filter='^(dispatch/|overlap/cpu_)' && limit=120
    if [[ $group == workload1 ]]; then modes_of "$round" graph; else modes_of "$round"; fi
    for mode in "${modes[@]}"; do
      mode_flags "$mode"
      run "bench_${group}_$mode$r" $limit env TANDEM_BENCH_ROWS=$rows \
          TANDEM_BENCH_PLACES="$place,cpu" "$bench" --benchmark_filter="$filter" \
          --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
          --benchmark_out_format=json --benchmark_out="$dir/bench_${group}_$mode$r.json" \
          "${bench_time[@]}" "${m[@]}"
    done
  done
done
echo "total $(( $(date +%s) - start )) s"
echo
python3 tools/concurrency_summary.py --dir="$dir" --place="$place" | tee "$dir/summary.txt"
