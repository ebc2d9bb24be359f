#!/usr/bin/env bash
# Workload 1 trains on the sim place with the table on the CPU (dense and
# sparse), without the guard and in-order, and the loss falls.
set -euo pipefail
bin="$(dirname "$0")/embedding_offload"
for flags in "" "--is_sparse --batch=8" "--no_guard" "--in_order --is_sparse --batch=8"; do
  out=$("$bin" --place=sim:0 --rows=1000 --steps=30 --log_every=10 --lr=0.5 $flags)
  echo "$out"
  grep -q "decreasing" <<<"$out"
  grep -q "NOT decreasing" <<<"$out" && exit 1
  mode=concurrent; [[ "$flags" == *--in_order* ]] && mode=in-order
  grep -q "gradient, executor: $mode$" <<<"$out"
done
out=$("$bin" --place=sim:0 --rows=1000 --steps=5 --lr=0.5 --profile)
grep -q "Event Summary" <<<"$out"
grep -q "lookup_table" <<<"$out"
if "$bin" --place=sim:0 --rows=0 --steps=1 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q "rows, dim and batch must be > 0" "$TEST_TMPDIR/err"
