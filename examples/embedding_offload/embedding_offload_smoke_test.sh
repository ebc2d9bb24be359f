#!/usr/bin/env bash
# Workload 1 trains on the sim place with the table on the CPU (dense and
# sparse), without the guard and in-order, and the loss falls; profiling,
# traces, metrics files and bad flags.
set -euo pipefail
bin="$(dirname "$0")/embedding_offload"
for flags in "" "--is_sparse --batch_size=8" "--no_guard" "--in_order --is_sparse --batch_size=8"; do
  out=$("$bin" --place=sim:0 --rows=1000 --steps=30 --log_every=10 --lr=0.5 $flags)
  echo "$out"
  grep -q "decreasing" <<<"$out"
  grep -q "NOT decreasing" <<<"$out" && exit 1
  mode=concurrent; [[ "$flags" == *--in_order* ]] && mode=in-order
  grep -q "gradient, executor: $mode$" <<<"$out"
done
# A run that looks up fewer ids than the table has rows cannot show the loss
# falling: it says the check was skipped and succeeds.
out=$("$bin" --place=sim:0 --rows=100000 --steps=3 --is_sparse --batch_size=8)
grep -q "over 3 steps (.*not checked: fewer ids looked up than the table has rows)" <<<"$out" ||
  grep -q "over 3 steps (decreasing)" <<<"$out"
# --profile_steps=3: steps 1-3 profiled (step 0 is warm-up), the run goes on
# to its 8 steps; --trace_out writes the Chrome trace.
out=$("$bin" --place=sim:0 --rows=1000 --steps=8 --lr=0.5 --profile_steps=3 \
      --trace_out="$TEST_TMPDIR/trace.json")
grep -q "profile of steps 1-3 (step 0 was warm-up)" <<<"$out"
grep -q "Event Summary" <<<"$out"
grep -qE "^lookup_table +3 " <<<"$out" || { echo "FAILED: lookup_table not 3 calls"; exit 1; }
grep -q "over 8 steps" <<<"$out"
grep -q '"traceEvents"' "$TEST_TMPDIR/trace.json"
# --metrics_out: one line per progress line (steps 0, 10, 20, 29).
"$bin" --place=sim:0 --rows=1000 --steps=30 --log_every=10 --batch_size=4 \
    --metrics_out="$TEST_TMPDIR/m.jsonl" >/dev/null
[[ $(grep -c '"kind":"train"' "$TEST_TMPDIR/m.jsonl") == 4 ]]
grep -q '^{"kind":"train","step":29,"loss":[0-9.]*,"steps_per_s":[0-9.]*,"examples_per_s":[0-9.]*,"h2d_copies":1,' \
    "$TEST_TMPDIR/m.jsonl"
if "$bin" --place=sim:0 --rows=0 --steps=1 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q -- "--rows, --embedding_dim and --batch_size must be > 0, got 0, 150 and 1" "$TEST_TMPDIR/err"
if "$bin" --place=sim:0 --rows=10 --trace_out=x.json 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q -- "--trace_out needs --profile_steps" "$TEST_TMPDIR/err"
help=$("$bin" --help 2>&1 || true)  # gflags exits 1 after --help
grep -q "trains a large embedding table kept in host memory" <<<"$help"
grep -q -- "-embedding_dim (embedding width)" <<<"$help"
grep -q -- "-profile_steps (profile this many training steps" <<<"$help"
# --auto_place on a sim device whose memory the table does not fit: the table,
# its lookup, gradient and update go to the cpu by themselves and it trains.
out=$("$bin" --place=sim:0 --rows=100000 --embedding_dim=16 --batch_size=8 --is_sparse \
      --steps=30 --log_every=10 --lr=0.5 --auto_place --sim_memory_limit_mb=4 \
      --print_placement --cost_cache_dir=)
echo "$out"
grep -Eq "^1 +lookup_table +cpu +auto +'emb_w' 6\.1 MiB does not fit the 3\.8 MiB budget of sim:0" <<<"$out"
grep -Eq "lookup_table_grad +cpu +inherit" <<<"$out"
grep -Eq "sgd +cpu +param" <<<"$out"
grep -q "executor: concurrent, auto placement$" <<<"$out"
grep -q "decreasing" <<<"$out"
if "$bin" --place=sim:0 --rows=10 --memory_budget_mb=8 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q -- "--memory_budget_mb needs --auto_place" "$TEST_TMPDIR/err"
