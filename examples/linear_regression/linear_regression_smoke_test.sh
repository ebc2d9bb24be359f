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
grep -q "invalid place 'tpu:0'" "$TEST_TMPDIR/err.txt"
