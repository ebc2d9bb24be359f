#!/usr/bin/env bash
# Short CTR runs on small tables: the held-out AUC climbs far above chance
# (0.5) on the sim place with the tables on the cpu; the copies per step are
# the ones that placement needs (ids and label in, embedding gradients
# out), none without the guard's split or on the cpu alone. The header says
# which executor mode runs (--in_order: one step at a time) and whether the
# table gradients are sparse (the default) or dense. A resumed run
# gives the uninterrupted run's numbers; profiling and traces work; replicas
# in one process (--data_parallel) and across processes (--mpi) learn.
set -euo pipefail
bin="$(dirname "$0")/ctr"
small="--vocab_sizes=1000,2000,5000,10000 --batch_size=256 --eval_every=100 --eval_examples=5000"

auc() { grep -oP '^held-out AUC [0-9.]+ -> \K[0-9.]+' <<<"$1"; }
check_auc() {
  awk -v a="$(auc "$2")" 'BEGIN { exit !(a > 0.6) }' || { echo "FAILED: AUC <= 0.6 $1"; exit 1; }
}

out=$("$bin" --place=sim:0 --steps=300 $small)
echo "$out"
check_auc "on sim:0" "$out"
grep -q "on cpu, MLP \[64, 32\] on sim:0" <<<"$out"
grep -q "of tables, sparse gradients) on cpu" <<<"$out"   # --is_sparse is the default
grep -q "executor: concurrent$" <<<"$out"
# 4 ids + label in, 4 sparse embedding gradients out.
grep -q "copies/step: H2D 5 (.*), D2H 4 " <<<"$out"

# --is_sparse=false: dense table gradients, the same model otherwise.
out=$("$bin" --place=sim:0 --is_sparse=false --steps=100 $small)
echo "$out"
grep -q "of tables, dense gradients) on cpu, MLP \[64, 32\] on sim:0" <<<"$out"

out=$("$bin" --place=sim:0 --no_guard --in_order --steps=100 $small)
echo "$out"
grep -q "executor: in-order$" <<<"$out"
grep -q "copies/step: H2D 5 (.*), D2H 0 " <<<"$out"

# --data_parallel=2: two sim replicas of the MLP, the tables shared on the
# host; --mpi under mpirun: two processes, a copy of the tables each. Both
# learn as one device does.
out=$("$bin" --place=sim:0 --data_parallel=2 --steps=300 $small)
echo "$out"
grep -q "^data parallel: 2 replicas on sim:0, sim:1, .* 20 shared variables" <<<"$out" ||
  { echo "FAILED: the tables are not shared by the replicas"; exit 1; }
check_auc "with --data_parallel=2" "$out"
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  out=$(timeout 300 mpirun --bind-to none -np 2 "$bin" --mpi --place=sim:0 --steps=300 $small)
  echo "$out"
  grep -q "^data parallel: 2 replicas on sim:0 (rank 0 of the mpi job), .* 0 shared variables" \
    <<<"$out" || { echo "FAILED: no mpi replicas"; exit 1; }
  check_auc "with mpirun -np 2 --mpi" "$out"
else
  echo "SKIPPED: the --mpi run (no mpirun; tools/setup.sh installs openmpi-bin)"
fi

out=$("$bin" --place=cpu --steps=200 $small --metrics_out="$TEST_TMPDIR/m.jsonl")
echo "$out"
check_auc "on cpu" "$out"
grep -q "copies/step: H2D 0 (0 B), D2H 0 (0 B)" <<<"$out"
# --metrics_out: evaluations at steps 0, 100, 200 with the printed AUC.
m="$TEST_TMPDIR/m.jsonl"
[[ $(grep -c '"kind":"eval"' "$m") == 3 ]] || { echo "FAILED: eval lines"; cat "$m"; exit 1; }
last=$(grep -oP '^\{"kind":"eval","step":200,"logloss":[0-9.]+,"auc":\K[0-9.]+(?=\}$)' "$m")
awk -v a="$last" -v b="$(auc "$out")" 'BEGIN { exit !(a - b < 0.00005 && b - a < 0.00005) }' ||
  { echo "FAILED: last eval line"; cat "$m"; exit 1; }
grep -q '^{"kind":"train","step":200,"loss":[0-9.]*,"examples_per_s":[0-9.]*,"h2d_copies":0,"h2d_bytes":0,"d2h_copies":0,"d2h_bytes":0}$' "$m"

# Resume: 100 steps, checkpoint, resume to 200 == 200 steps straight (the
# data stream is indexed by step; Adam's state is in the checkpoint).
cpu="--place=cpu --log_every=50 --eval_every=50 $small"
straight=$("$bin" $cpu --steps=200 | grep -E '^step +(150|200) ')
"$bin" $cpu --steps=100 --checkpoint_dir="$TEST_TMPDIR/ckpt" --checkpoint_every=50 >/dev/null
resumed=$("$bin" $cpu --steps=200 --checkpoint_dir="$TEST_TMPDIR/ckpt" --resume)
echo "$resumed"
grep -q "resumed from .*/checkpoint after step 100$" <<<"$resumed"
grep -q "saved .*/checkpoint (step 200)" <<<"$resumed"
[[ "$(grep -E '^step +(150|200) ' <<<"$resumed" | sed 's/[0-9]* examples\/s.*copies/copies/')" == \
   "$(sed 's/[0-9]* examples\/s.*copies/copies/' <<<"$straight")" ]] ||
  { echo "FAILED: resumed run differs from the straight one:"; echo "$straight"; exit 1; }
grep -q "nothing to do: the checkpoint is at step 200 of 200" \
    <<<"$("$bin" $cpu --steps=200 --checkpoint_dir="$TEST_TMPDIR/ckpt" --resume)"
# A checkpoint of another model is refused, naming the variable.
if "$bin" $cpu --hidden=32,32 --steps=300 --checkpoint_dir="$TEST_TMPDIR/ckpt" --resume \
    2>"$TEST_TMPDIR/err"; then echo "FAILED: resumed another model"; exit 1; fi
grep -q "'dense0.b_0' is \[64\] but this model has \[32\]" "$TEST_TMPDIR/err"

# --profile_steps=20: steps 2-21 profiled (step 1 is warm-up), with a trace.
prof=$("$bin" --place=sim:0 --steps=30 $small --profile_steps=20 --trace_out="$TEST_TMPDIR/t.json")
grep -q "profile of training steps 2-21 (step 1 was warm-up)" <<<"$prof"
grep -qE "^lookup_table +80 " <<<"$prof" || { echo "FAILED: 4 lookups x 20 steps"; exit 1; }
grep -q '"traceEvents"' "$TEST_TMPDIR/t.json"

if "$bin" --trace_out=x.json 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q -- "--trace_out needs --profile_steps" "$TEST_TMPDIR/err"
if "$bin" --resume 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q -- "--resume needs --checkpoint_dir" "$TEST_TMPDIR/err"
if "$bin" --vocab_sizes=1000,x 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q "vocab_sizes must be comma-separated integers, got '1000,x'" "$TEST_TMPDIR/err"
if "$bin" --vocab_sizes=1000,1 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q "vocabulary size of field 1 must be >= 2, got 1" "$TEST_TMPDIR/err"
help=$("$bin" --help 2>&1 || true)  # gflags exits 1 after --help
grep -q "trains a click-through-rate model" <<<"$help"
grep -q -- "-checkpoint_dir (save a checkpoint here" <<<"$help"
echo PASSED
