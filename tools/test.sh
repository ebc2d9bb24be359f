#!/usr/bin/env bash
# Installs what is missing, runs every test, prints "N passed, N failed".
#
#   tools/test.sh                      # bazel test //...
#   tools/test.sh --config=asan        # extra bazel flags pass through
#
# Exits non-zero if any test fails or the build breaks.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh || exit 1

log=$(mktemp)
bazel test //... "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(grep -cE '^//\S+\s+(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//\S+\s+.*(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log")
if ((rc != 0 && failed == 0)); then failed=1; fi   # the build itself failed

# Layering: framework/ depends on Abseil, glog (and test libraries) only.
bad=$(bazel query 'deps(//framework/...)' 2>/dev/null |
      grep -E '^(//backends|//ops|//profiler|@local_config_cuda|//third_party/dnnl)' || true)
if [[ -n "$bad" ]]; then
  echo "layering violation: //framework/... depends on:"; echo "$bad"
  failed=$((failed + 1)); rc=1
else
  passed=$((passed + 1)); echo "layering check (deps of //framework/...) PASSED"
fi
rm -f "$log"
echo "$passed passed, $failed failed"
exit $rc
