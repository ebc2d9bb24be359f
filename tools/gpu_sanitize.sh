#!/usr/bin/env bash
# compute-sanitizer over the bundle's CUDA tests (tools/gpu_run.sh --sanitize
# runs this; on the GPU machine, after tools/gpu_bundle.sh here).
#
#   tools/gpu_run.sh --sanitize                       # every tool, CUDA tests
#   tools/gpu_run.sh --sanitize --filter 'cuda_device|conformance_test'
#   tools/gpu_run.sh --sanitize --tools memcheck --jobs 2 --timeout 300
#
# Runs each test binary of .bundle/tandem.tar.xz whose name matches the
# filter (default: cuda|gpu|conformance) under each tool: memcheck with
# --leak-check full (the CUDA devices return their cached memory at exit,
# backends/cuda/cuda_device.h, so a leak is memory still held), racecheck,
# initcheck and synccheck. Runs go --jobs at a time (default 4; one GPU
# takes several processes) and each is stopped after --timeout seconds
# (default 240; reported TIMEOUT, counted as a failure). Prints a line per
# run and, per tool, the binaries run, clean, with errors and timed out and
# the errors by kind; full logs go to $OUT/sanitize/ when $OUT is set (else
# /tmp/sanitize/). Exits non-zero if any run has an error that is not
# expected, fails its tests or times out.
#
# Expected CUDA API errors: a test that provokes one on purpose (a cudaMalloc
# beyond the device's memory, checking that it is ResourceExhausted) is
# listed in EXPECTED_API_ERRORS with the error names it may hit; those are
# counted as "expected", not as errors. Any other API error, and every
# memory, race, initialisation, synchronisation or leak report, is an error.
# A matching binary that makes no CUDA call (a host-only test of the CUDA
# backend's planning code) is counted "host-only" once its tests pass.
# A machine whose sanitizer refuses the device ("Device not supported", as
# under gVisor) is reported as such and exits 2.
set -uo pipefail
source "$(cd "$(dirname "$0")" && pwd)/gpu_env.sh"

declare -A EXPECTED_API_ERRORS=(
  # DeviceOutOfMemoryIsResourceExhaustedAndGpuStaysUsable: cudaMalloc(2^50).
  [backends_cuda_cuda_allocator_test]='cudaErrorMemoryAllocation'
  # SynchronisingWhileCapturingFailsAndTheGpuStaysUsable: a stream sync while
  # capturing (refused), which invalidates that capture.
  [backends_cuda_cuda_graph_test]='cudaErrorStreamCaptureUnsupported|cudaErrorStreamCaptureInvalidated'
)

filter='cuda|gpu|conformance'
tools=(memcheck racecheck initcheck synccheck)
jobs=4
timeout_s=240
while [[ $# -gt 0 ]]; do
  case "$1" in
    --filter) filter="$2"; shift 2 ;;
    --tools) IFS=, read -r -a tools <<< "$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "gpu_sanitize: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [[ -z "$sanitizer" ]]; then
  echo "gpu_sanitize: compute-sanitizer not found (PATH, /usr/local/cuda/bin)"; exit 2
fi
logs="${OUT:-/tmp}/sanitize"
rm -rf "$logs" && mkdir -p "$logs"

binaries=()
while read -r t; do [[ "$t" =~ $filter ]] && binaries+=("$t"); done < /tmp/tandem/tests.txt
if ((${#binaries[@]} == 0)); then echo "gpu_sanitize: no test matches '$filter'"; exit 2; fi
echo "compute-sanitizer $("$sanitizer" --version | grep -oE '[0-9]{4}\.[0-9.]+' | head -1):" \
     "${#binaries[@]} binaries x ${#tools[@]} tools, $jobs at a time, ${timeout_s} s each"

# One run: <tool> <binary>. Writes <tool>.<binary>.log and a result line
# "<tool> <binary> <status> <errors> <expected> <kinds>" to <tool>.<binary>.result.
run_one() {
  local tool=$1 bin=$2
  local log="$logs/$tool.$bin.log" extra=()
  [[ "$tool" == memcheck ]] && extra=(--leak-check full)
  local start=$SECONDS
  timeout "$timeout_s" "$sanitizer" --tool "$tool" "${extra[@]}" --print-limit 100 \
    /tmp/tandem/bin/"$bin" > "$log" 2>&1
  local rc=$?
  local allowed=${EXPECTED_API_ERRORS[$bin]:-}
  # Report headers: "========= Invalid __global__ read of size 4 bytes",
  # "========= Program hit cudaErrorMemoryAllocation (error 2) ...",
  # "========= Leaked 1024 bytes at 0x...", "========= Race reported ...".
  local api expected=0 kinds
  # An API error whose first host frame is in NCCL is NCCL's own business:
  # ncclInitKernelsForDevice probes each of its kernels with
  # cudaFuncGetAttributes and clears the cudaErrorNoKernelImageForDevice of
  # those not built for this GPU (seen on the H100 with PyTorch's libnccl).
  api=$(awk '/^========= Program hit cuda/ { e = $4; getline; getline;
                print (/in libnccl\.so/ ? "nccl:" e : e) }' "$log")
  local unexpected_api=0
  for e in $api; do
    if [[ "$e" == nccl:* || ( -n "$allowed" && "$e" =~ ^($allowed)$ ) ]]; then
      expected=$((expected + 1))
    else
      unexpected_api=$((unexpected_api + 1))
    fi
  done
  # Every other report header is an error (leaks included); the tool's own
  # total counts past --print-limit.
  local headers summary
  headers=$(grep -E '^========= [A-Z]' "$log" |
            grep -vE 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER|Target application|Program hit')
  # memcheck, initcheck and synccheck end with "ERROR SUMMARY: N errors";
  # racecheck with "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
  summary=$(grep -oE 'ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: [0-9]+ hazards displayed \([0-9]+' \
              "$log" | tail -1 | grep -oE '[0-9]+$')
  local errors=$(( $(grep -c . <<< "$headers") + unexpected_api ))
  (( ${summary:-0} - expected > errors )) && errors=$(( summary - expected ))
  kinds=$(sed -E 's/^========= //; s/ (of size|at|in|on|reported) .*//; s/^Leaked [0-9]+ bytes/Leaked/' \
            <<< "$headers" | grep . | sort | uniq -c |
          awk '{c=$1; $1=""; printf "%s%s x%d", sep, substr($0,2), c; sep="; "}')
  ((unexpected_api > 0)) && kinds="${kinds:+$kinds; }unexpected API errors x$unexpected_api"
  local status=PASSED
  if grep -q 'Device not supported' "$log"; then
    status=UNSUPPORTED
  elif ((rc != 124)) && ! grep -qE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" &&
       grep -q '^\[  PASSED  \]' "$log" && ! grep -q '^\[  FAILED  \]' "$log"; then
    # A host-only test (its name matched the filter): it passed and the tool,
    # which found no CUDA call to instrument ("Target application terminated
    # before first instrumented API call"), wrote no summary.
    status=NO_CUDA
  elif ((rc == 124)); then
    status=TIMEOUT
  elif ((errors > 0)); then
    status=ERRORS
  elif ((rc != 0)); then
    status=FAILED  # the tests themselves failed, or the tool could not run them
  fi
  printf '%-10s %-55s %-11s %3d errors %2d expected %4d s %s\n' "$tool" "$bin" "$status" \
    "$errors" "$expected" $((SECONDS - start)) "${kinds:+($kinds)}" | tee "$logs/$tool.$bin.result"
}
export -f run_one
export logs sanitizer timeout_s
export EXPECTED_API_ERRORS_DECL="$(declare -p EXPECTED_API_ERRORS)"

start=$SECONDS
for tool in "${tools[@]}"; do
  for bin in "${binaries[@]}"; do echo "$tool $bin"; done
done | xargs -P "$jobs" -L 1 bash -c 'eval "$EXPECTED_API_ERRORS_DECL"; run_one "$0" "$1"'

echo "== per tool ($((SECONDS - start)) s in all)"
rc=0
for tool in "${tools[@]}"; do
  results=$(cat "$logs/$tool".*.result 2>/dev/null)
  count() { grep -c " $1 " <<< "$results"; }
  errors=$(awk '{s += $4} END {print s + 0}' <<< "$results")
  expected=$(awk '{s += $6} END {print s + 0}' <<< "$results")
  printf '%-10s %2d run, %2d clean, %2d host-only, %2d with errors, %2d failed, %2d timed out, %2d unsupported;' \
    "$tool" "$(grep -c . <<< "$results")" "$(count PASSED)" "$(count NO_CUDA)" "$(count ERRORS)" \
    "$(count FAILED)" "$(count TIMEOUT)" "$(count UNSUPPORTED)"
  printf ' %d errors, %d expected API errors\n' "$errors" "$expected"
  if (( $(count ERRORS) + $(count FAILED) + $(count TIMEOUT) > 0 )); then rc=1; fi
  if (( $(count UNSUPPORTED) > 0 )) && ((rc == 0)); then rc=2; fi
done
if ((rc == 2)); then
  echo "gpu_sanitize: compute-sanitizer does not support this machine's GPU runtime (gVisor?)"
fi
exit $rc
