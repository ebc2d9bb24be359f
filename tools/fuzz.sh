#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (bazel --config=fuzz: libFuzzer,
# ASan+UBSan) and runs each for N seconds from its seed corpus, printing per
# target the executions and libFuzzer's last "cov:" (edges covered).
#
#   tools/fuzz.sh                 # 60 s per target
#   tools/fuzz.sh --seconds=20    # CI's bounded run
#   tools/fuzz.sh --seconds=600 //data:idx_fuzzer
#
# New corpus entries go to a scratch directory (the repo's seed corpus stays
# as committed). A crash stops that target: its input is copied to
# <package>/<target>_regressions/ (crash-<sha1>), which the normal-build
# <target>_regression_test then replays; fix the bug and commit the file.
# Skips cleanly (exit 0, with a message) when clang or libFuzzer is missing.
# Exits non-zero if a target crashed or failed to build.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=60
targets=()
for a in "$@"; do
  case "$a" in
    --seconds=*) seconds=${a#--seconds=} ;;
    //*) targets+=("$a") ;;
    *) echo "usage: tools/fuzz.sh [--seconds=N] [//pkg:target_fuzzer ...]" >&2; exit 2 ;;
  esac
done
if ((${#targets[@]} == 0)); then
  targets=(//framework/place:place_fuzzer //data:idx_fuzzer
           //framework/persistence:checkpoint_fuzzer //framework/persistence:safetensors_fuzzer
           //tests/fuzz:infer_shape_fuzzer //tests/fuzz:program_fuzzer)
fi

if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null ||
   ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: SKIPPED: clang or libclang_rt.fuzzer not installed (apt-get install clang)"
  exit 0
fi

if ! bazel build --config=fuzz "${targets[@]}"; then
  echo "fuzz: the fuzz targets failed to build"; exit 1
fi
bin_dir=$(bazel info --config=fuzz bazel-bin 2>/dev/null)

rc=0
summary=()
for t in "${targets[@]}"; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  work=$(mktemp -d)
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -r "$pkg/${name}_corpus/." "$work/corpus/" 2>/dev/null
  [[ -d "$pkg/${name}_regressions" ]] && cp -r "$pkg/${name}_regressions/." "$work/corpus/"
  log="$work/log"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    "$bin_dir/$pkg/$name" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=20 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" >"$log" 2>&1
  status=$?
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  line="$t: ${execs:-?} executions in ${seconds} s, ${cov:-cov: ?}, corpus $(ls "$work/corpus" | wc -l) inputs"
  crashes=("$work"/artifacts/*)
  if ((status != 0)) || [[ -e "${crashes[0]}" ]]; then
    rc=1
    mkdir -p "$pkg/${name}_regressions"
    for c in "${crashes[@]}"; do
      [[ -e "$c" ]] || continue
      dest="$pkg/${name}_regressions/crash-$(sha1sum "$c" | cut -c1-16)"
      cp "$c" "$dest"; line+=" CRASH: $dest"
    done
    grep -E 'ERROR|SUMMARY|Check failed|==[0-9]+==' "$log" | head -20
  fi
  summary+=("$line")
  rm -rf "$work"
done
printf '%s\n' "${summary[@]}"
exit $rc
