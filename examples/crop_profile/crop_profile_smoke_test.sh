#!/usr/bin/env bash
# Workload 2 on the sim place: 1 H2D + 1 D2H per iteration with the slice on
# the device, none with the slice under device_guard("cpu"); with
# --profile_steps, --advise and --trace_out, the report (of the last N
# iterations), the advice and both traces.
set -euo pipefail
bin="$(dirname "$0")/crop_profile"
out=$("$bin" --place=sim:0 --steps=20 --warmup=2)
echo "$out"
grep -q "slice on sim:0 : 1 H2D + 1 D2H copies per iteration" <<<"$out"
grep -q "slice on cpu   : 0 H2D + 0 D2H copies per iteration" <<<"$out"
grep -q "on sim:0, executor: concurrent$" <<<"$out"
out=$("$bin" --place=sim:0 --steps=5 --warmup=1 --in_order)
grep -q "on sim:0, executor: in-order$" <<<"$out"
grep -q "slice on sim:0 : 1 H2D + 1 D2H copies per iteration" <<<"$out"

trace="${TEST_TMPDIR:-/tmp}/crop.json"
out=$("$bin" --place=sim:0 --steps=5 --warmup=1 --profile_steps=5 --advise --trace_out="$trace")
echo "$out"
grep -q "Profiling Report" <<<"$out"
grep -q "^GpuMemcpy                Calls: 10 " <<<"$out"   # 2 per step, 5 steps
grep -q "^GpuMemcpy                Calls: 0 " <<<"$out"
grep -q "put 'slice' under device_guard(\"cpu\") to remove both" <<<"$out"
grep -q "No op placement causes synchronous copies." <<<"$out"
grep -Eq "sync copies per step [12] -> 0" <<<"$out"
test -s "${trace%.json}.before.json"
test -s "${trace%.json}.after.json"
# --profile_steps=3 of 5: the report covers the last 3 iterations (the
# warm-up run and the first 2 timed ones left out).
out=$("$bin" --place=sim:0 --steps=5 --warmup=1 --profile_steps=3)
grep -q "^GpuMemcpy                Calls: 6 " <<<"$out"   # 2 per step, 3 steps
grep -q "(first 3 runs excluded as warm-up)" <<<"$out"
if "$bin" --place=sim:0 --profile_steps=-1 2>"${TEST_TMPDIR:-/tmp}/err"; then exit 1; fi
grep -q -- "--profile_steps >= 0" "${TEST_TMPDIR:-/tmp}/err"

if "$bin" --place=sim:0 --profile_steps=1 --sort_key=median >/dev/null 2>&1; then
  echo "expected --sort_key=median to fail" >&2
  exit 1
fi
# An unwritable trace path: both placements still run, then the error.
if out=$("$bin" --place=sim:0 --steps=2 --warmup=0 --trace_out=/nonexistent-dir/t.json 2>&1); then
  echo "expected an unwritable --trace_out to fail" >&2
  exit 1
fi
grep -q "slice on cpu" <<<"$out"
grep -q "cannot write the Chrome trace to '/nonexistent-dir/t.before.json'" <<<"$out"

# --auto_place: the automatic placement puts the slice on the cpu by itself
# (0 copies), says why, and draws the split.
dot="${TEST_TMPDIR:-/tmp}/crop.dot"
out=$("$bin" --place=sim:0 --steps=5 --warmup=1 --auto_place --print_placement \
      --placement_dot="$dot" --cost_cache_dir=)
echo "$out"
grep -q "slice on cpu (auto): 0 H2D + 0 D2H copies per iteration" <<<"$out"
grep -Eq "^3 +slice +cpu +auto +on cpu est\. [0-9]+ us \(0 copies\); on sim:0 est\." <<<"$out"
grep -q "auto placement on sim:0 (no memory budget): est. step" <<<"$out"
grep -q "^digraph placement {" "$dot"
if "$bin" --place=sim:0 --memory_budget_mb=-1 --auto_place 2>"${TEST_TMPDIR:-/tmp}/err"; then exit 1; fi
grep -q -- "--memory_budget_mb must be >= 0 (0: what the device can hold), got -1" \
    "${TEST_TMPDIR:-/tmp}/err"
