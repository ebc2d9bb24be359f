#!/usr/bin/env bash
# The example trains on cpu and on the sim place, and the loss falls.
set -euo pipefail
bin="$(dirname "$0")/linear_regression"
for place in cpu sim:0; do
  out=$("$bin" --place="$place" --steps=60 --log_every=20)
  echo "$out"
  grep -q "training a linear model on $place" <<<"$out"
  grep -q "executor: none (eager ops, one at a time)$" <<<"$out"
  first=$(grep -oP '^loss \K[0-9.]+' <<<"$out")
  last=$(grep -oP ' -> \K[0-9.]+' <<<"$out")
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 10) }' || {
    echo "loss did not fall tenfold on $place: $first -> $last"; exit 1; }
done
if "$bin" --place=tpu:0 --steps=1 2>"$TEST_TMPDIR/err.txt"; then echo "bad place accepted"; exit 1; fi
grep -q 'place "tpu:0" is not valid' "$TEST_TMPDIR/err.txt"
# Place strings are exact: no other case, no whitespace, no leading zeros.
for bad in GPU Gpu:0 " cpu" "cpu " sim:01; do
  if "$bin" --place="$bad" --steps=1 2>"$TEST_TMPDIR/err.txt"; then
    echo "bad place '$bad' accepted"; exit 1
  fi
  grep -qF "place \"$bad\" is not valid" "$TEST_TMPDIR/err.txt"
done
