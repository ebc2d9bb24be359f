#!/usr/bin/env bash
# Runs on the GPU machine, over a bundle made by tools/gpu_bundle.sh.
#
#   tools/gpu_run.sh [--filter REGEX | --skip-tests] [-- BINARY ARGS...]...
#   tools/gpu_run.sh --sanitize [--filter REGEX] [--tools memcheck,...] [--jobs N] [--timeout S]
#
# --sanitize runs the CUDA tests under compute-sanitizer instead (memcheck
# with leak checking, racecheck, initcheck, synccheck) and prints a summary
# per tool: see tools/gpu_sanitize.sh.
#
# Unpacks .bundle/tandem.tar.xz into /tmp/tandem, runs every test binary
# (or those matching REGEX) and prints one line per binary and the totals as
# "N passed, N failed"; full logs go to $OUT/tests.log when $OUT is set.
# Each "-- BINARY ARGS" group afterwards runs that bundled binary too (its
# output is printed and appended to $OUT/runs.log).
set -uo pipefail
if [[ "${1:-}" == "--sanitize" ]]; then shift; exec "$(dirname "$0")/gpu_sanitize.sh" "$@"; fi
source "$(cd "$(dirname "$0")" && pwd)/gpu_env.sh"
log="${OUT:-/tmp}/tests.log"
: > "$log"

filter="."
if [[ "${1:-}" == "--filter" ]]; then filter="$2"; shift 2; fi
if [[ "${1:-}" == "--skip-tests" ]]; then filter="^$"; shift; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU visible"

passed=0; failed=0
# The tests' data files, at the workspace-relative paths they open (gpu_bundle.sh).
mkdir -p /tmp/tandem/src && pushd /tmp/tandem/src >/dev/null
while read -r t; do
  [[ "$t" =~ $filter ]] || continue
  start=$(date +%s%N)
  # A fresh temporary directory per binary, as bazel test gives: a second
  # run on the same machine finds none of the first run's files.
  tmp=$(mktemp -d /tmp/tandem_test.XXXXXX)
  if TEST_TMPDIR="$tmp" /tmp/tandem/bin/"$t" >> "$log" 2>&1; then
    passed=$((passed + 1)); status=PASSED
  else
    failed=$((failed + 1)); status=FAILED
  fi
  rm -rf "$tmp"
  printf '%-60s %s in %d ms\n' "$t" "$status" $(( ($(date +%s%N) - start) / 1000000 ))
done < /tmp/tandem/tests.txt
popd >/dev/null
if ((failed)); then grep -E '^\[  FAILED  \]|Failure|error' "$log" | head -40; fi
echo "$passed passed, $failed failed"

while [[ "${1:-}" == "--" ]]; do
  shift
  cmd=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do cmd+=("$1"); shift; done
  echo "== ${cmd[*]}"
  /tmp/tandem/bin/"${cmd[0]}" "${cmd[@]:1}" 2>&1 | tee -a "${OUT:-/tmp}/runs.log"
done
((failed == 0))
