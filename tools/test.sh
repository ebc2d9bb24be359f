#!/usr/bin/env bash
# Installs what is missing, runs every test, prints "N passed, N failed".
#
#   tools/test.sh                      # bazel test //...
#   tools/test.sh --config=asan        # extra bazel flags pass through
#   tools/test.sh --with-asan          # then ASAN_TARGETS under AddressSanitizer
#                                      # + UBSan, leak detection on (clang's
#                                      # --config=fuzz build, gcc's
#                                      # --config=asan without clang)
#   tools/test.sh --with-tsan          # then the executor and sim tests under
#                                      # ThreadSanitizer (TSAN_TARGETS), counted
#                                      # in the same totals
#   tools/test.sh --with-fuzz          # then tools/fuzz.sh --seconds=20 (each
#                                      # libFuzzer target 20 s; skipped with a
#                                      # message without clang), one more count
#
# Sanitizer passes are counted in the same totals; the extra bazel flags go
# to every pass. Exits non-zero if
# any test fails or a build breaks.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh || exit 1
# Bazel's disk cache (.bazelrc) lets a fresh clone reuse compiled actions; bounded here.
tools/prune_disk_cache.sh || exit 1

# The tests that run threads against each other (.bazelrc, build:tsan): the
# sim streams and device, the executor's dependency graph, worker pool and
# concurrent runs, fault injection and graph capture over them, and data
# parallelism (one thread per replica meeting in a collective group). The
# single-threaded parts (placer, memory walk, checkpoints, cost model) stay
# out: they would add test time, not interleavings.
TSAN_TARGETS=(//backends/sim/...
              //framework/runtime:executor_test //framework/runtime:dependency_graph_test
              //framework/runtime:host_worker_pool_test
              //tests/runtime:concurrency_test //tests/runtime:fault_injection_test
              //tests/runtime:run_sequences_test //tests/runtime:differential_tsan_test
              //tests/runtime:graph_capture_test
              //framework/parallel:collective_group_test //tests/parallel:data_parallel_tsan_test)

# ASan + UBSan, leaks fail the test, so does any UBSan report; CPU-only:
# framework/, ops/, backends/common, backends/sim, data/ and profiler/ (their
# tests link backends/cpu through //backends:all, so its kernels run
# sanitized too), and fault injection (a failed allocation at every point of
# a training step leaks nothing). Built by clang with .bazelrc's config fuzz,
# the same objects the libFuzzer targets are made of, so with --with-fuzz the
# sanitized tree is compiled once; without clang, gcc's config asan (a
# separate k8-dbg tree). Either way the normal build's outputs stay.
ASAN_TARGETS=(//framework/... //ops/... //backends/common/... //backends/sim/... //data/...
              //profiler/... //tests/runtime:fault_injection_test)

with_tsan=0
with_fuzz=0
with_asan=0
args=()
for a in "$@"; do
  case "$a" in
    --with-tsan) with_tsan=1 ;;
    --with-asan) with_asan=1 ;;
    --with-fuzz) with_fuzz=1 ;;
    *) args+=("$a") ;;
  esac
done

passed=0
failed=0
rc=0
# Runs `bazel test` with the given arguments and adds its results to the totals.
run_tests() {
  local log
  log=$(mktemp)
  bazel test "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local p f
  p=$(grep -cE '^//\S+\s+(\(cached\) )?PASSED' "$log")
  f=$(grep -cE '^//\S+\s+.*(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log")
  if ((status != 0 && f == 0)); then f=1; fi   # the build itself failed
  if ((status != 0)); then rc=$status; fi
  passed=$((passed + p))
  failed=$((failed + f))
  rm -f "$log"
}

run_tests //... "${args[@]}"

# Layering: framework/ depends on Abseil, glog, zlib, nlohmann-json (and test libraries) only.
bad=$(bazel query 'deps(//framework/...)' 2>/dev/null |
      grep -E '^(//backends|//ops|//profiler|@local_config_cuda|//third_party/dnnl)' || true)
if [[ -n "$bad" ]]; then
  echo "layering violation: //framework/... depends on:"; echo "$bad"
  failed=$((failed + 1)); rc=1
else
  passed=$((passed + 1)); echo "layering check (deps of //framework/...) PASSED"
fi

# Nothing outside examples/ depends on examples/ (models live in //models).
bad=$(bazel query 'rdeps(//..., //examples/...) except //examples/...' 2>/dev/null || true)
if [[ -n "$bad" ]]; then
  echo "layering violation: these depend on //examples/...:"; echo "$bad"
  failed=$((failed + 1)); rc=1
else
  passed=$((passed + 1)); echo "layering check (rdeps of //examples/...) PASSED"
fi

# The rooms of framework/ depend downward (docs/design.md, section 3): the
# executor never reaches the automatic placement built on it, and placement
# and the estimates never reach the executor.
bad=""
for pair in "//framework/runtime/... //framework/autoplace/..." \
            "//framework/placement/... //framework/runtime/..." \
            "//framework/estimate/... //framework/runtime/..."; do
  read -r from to <<< "$pair"
  path=$(bazel query "somepath($from, $to)" 2>/dev/null || echo "query failed")
  if [[ -n "$path" ]]; then bad+="$from -> $to: $path"$'\n'; fi
done
if [[ -n "$bad" ]]; then
  echo "layering violation inside framework/:"; echo "$bad"
  failed=$((failed + 1)); rc=1
else
  passed=$((passed + 1)); echo "layering check (framework/ rooms depend downward) PASSED"
fi

if ((with_tsan)); then
  echo "ThreadSanitizer pass: ${TSAN_TARGETS[*]}"
  start=$SECONDS
  run_tests --config=tsan --config=nocuda "${TSAN_TARGETS[@]}" "${args[@]}"
  echo "ThreadSanitizer pass took $((SECONDS - start)) s"
fi
if ((with_asan)); then
  if command -v clang >/dev/null && command -v clang++ >/dev/null; then
    asan_config=(--config=fuzz)
  else
    asan_config=(--config=asan --config=nocuda)
  fi
  echo "AddressSanitizer + UBSan pass (${asan_config[*]}): ${ASAN_TARGETS[*]}"
  start=$SECONDS
  run_tests "${asan_config[@]}" "${ASAN_TARGETS[@]}" "${args[@]}"
  echo "AddressSanitizer + UBSan pass took $((SECONDS - start)) s"
fi

if ((with_fuzz)); then
  # The fuzz targets' corpora and regressions already ran as normal tests
  # (*_fuzzer_regression_test); this is the bounded libFuzzer run.
  start=$SECONDS
  if tools/fuzz.sh --seconds=20; then
    passed=$((passed + 1)); echo "fuzz run PASSED"
  else
    failed=$((failed + 1)); rc=1; echo "fuzz run FAILED"
  fi
  echo "fuzz run took $((SECONDS - start)) s"
fi
echo "$passed passed, $failed failed"
exit $rc
