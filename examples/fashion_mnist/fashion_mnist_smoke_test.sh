#!/usr/bin/env bash
# Short runs of the Fashion-MNIST trainer on a subset of the real data: the
# MLP learns (loss falls, test accuracy far above the 0.1 of chance) on cpu,
# on sim:0 and with the first layer on the cpu (concurrent and --in_order),
# to the same accuracy; a resumed checkpoint gives the uninterrupted run's
# numbers; the CNN learns; --amp=bf16 learns what float32 does;
# --data_parallel replicas, and the processes of an mpirun job with --mpi,
# learn what one device does.
# Skips (passes) when Debian's dataset-fashion-mnist is not installed.
set -euo pipefail
bin="$(dirname "$0")/fashion_mnist"
data=/usr/share/datasets/fashion-mnist
if [[ ! -r "$data/t10k-labels-idx1-ubyte.gz" ]]; then
  echo "SKIPPED: $data is missing (tools/setup.sh installs dataset-fashion-mnist)"
  exit 0
fi

# The mean loss of the first and last progress lines, and the final accuracy.
first_loss() { grep -oP 'step \d+/\d+  loss \K[0-9.]+' <<<"$1" | head -1; }
last_loss() { grep -oP 'step \d+/\d+  loss \K[0-9.]+' <<<"$1" | tail -1; }
accuracy() { grep -oP '^final test accuracy \K[0-9.]+' <<<"$1"; }
check() {  # check NAME AWK-CONDITION VALUES...
  local name=$1 cond=$2; shift 2
  awk -v a="${1:-}" -v b="${2:-}" "BEGIN { exit !($cond) }" || { echo "FAILED: $name ($*)"; exit 1; }
}

subset="--train_examples=6400 --test_examples=2000 --log_every=50 --seed=3"
declare -A acc
for run in "cpu" "sim:0" "sim:0 --first_layer_on_cpu" "sim:0 --first_layer_on_cpu --in_order"; do
  out=$("$bin" --place=$run --max_steps=300 $subset)
  echo "$out"
  check "mlp loss falls on $run" 'b < a * 0.7' "$(first_loss "$out")" "$(last_loss "$out")"
  mode=concurrent; [[ "$run" == *--in_order* ]] && mode=in-order
  grep -q "examples, executor: $mode$" <<<"$out" || { echo "FAILED: not $mode on $run"; exit 1; }
  acc[$run]=$(accuracy "$out")
  check "mlp accuracy > 0.6 on $run" 'a > 0.6' "${acc[$run]}"
done
grep -q "relu  *cpu  *guard" <<<"$("$bin" --place=sim:0 --first_layer_on_cpu --max_steps=1 \
    --print_placement $subset)" || { echo "FAILED: first layer not on the cpu"; exit 1; }
# The profiler's report of a mixed run: one async H2D and one sync D2H of
# the 64 x 256 activation per step, in the copy ledger.
prof=$("$bin" --place=sim:0 --first_layer_on_cpu --max_steps=12 --profile_steps=10 $subset)
grep -q "profile of training steps 2-11 (step 1 was warm-up)" <<<"$prof"
grep -qE "relu_0.tmp_0  +cpu  +sim:0  +65536  +async  +fc \(#3\)  +1 " <<<"$prof" ||
  { echo "FAILED: H2D copy missing from the profile"; echo "$prof"; exit 1; }
grep -qE "relu_0.tmp_0@GRAD  +sim:0  +cpu  +65536  +sync  +relu_grad \(#17\)  +1 " <<<"$prof" ||
  { echo "FAILED: D2H copy missing from the profile"; exit 1; }
check "cpu and sim:0 agree" 'a - b < 0.005 && b - a < 0.005' "${acc[cpu]}" "${acc[sim:0]}"
check "first layer on cpu agrees" 'a - b < 0.005 && b - a < 0.005' "${acc[cpu]}" \
    "${acc[sim:0 --first_layer_on_cpu]}"
check "in-order agrees" 'a - b < 0.002 && b - a < 0.002' "${acc[sim:0 --first_layer_on_cpu]}" \
    "${acc[sim:0 --first_layer_on_cpu --in_order]}"

# --amp=bf16: the fc layers in bfloat16 learn what float32 learns, on cpu
# and on sim:0 with the first layer on the host.
for run in "cpu" "sim:0 --first_layer_on_cpu"; do
  out=$("$bin" --place=$run --amp=bf16 --max_steps=300 $subset)
  grep -q ", amp bfloat16, " <<<"$out" || { echo "FAILED: no amp on $run"; echo "$out"; exit 1; }
  check "amp bf16 accuracy near float32's on $run" 'a - b < 0.01 && b - a < 0.01' \
      "${acc[$run]}" "$(accuracy "$out")"
done

# --data_parallel: 2 and 4 sim replicas (and 2 with the first layer shared on
# the host) learn what one device learns from the same batches.
for dp in "--data_parallel=2" "--data_parallel=4 --sim_devices=4" \
          "--data_parallel=2 --first_layer_on_cpu --bucket_mb=1"; do
  out=$("$bin" --place=sim:0 $dp --max_steps=300 $subset)
  grep -q "^data parallel: ${dp:16:1} replicas on sim:0, sim:1" <<<"$out" ||
    { echo "FAILED: no replicas with $dp"; echo "$out"; exit 1; }
  check "data parallel $dp agrees with sim:0" 'a - b < 0.005 && b - a < 0.005' "${acc[sim:0]}" \
      "$(accuracy "$out")"
done
if "$bin" --place=sim:0 --data_parallel=3 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q "batch_size a multiple of the replicas (--data_parallel, or the processes with --mpi), got 3, 25, 64 for 3 replicas" "$TEST_TMPDIR/err"

# --mpi under mpirun: 2 processes of one replica each learn what one device
# learns (rank 0 prints).
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  out=$(timeout 300 mpirun --bind-to none -np 2 "$bin" --mpi --place=sim:0 --max_steps=300 $subset)
  echo "$out"
  grep -q "^data parallel: 2 replicas on sim:0 (rank 0 of the mpi job)" <<<"$out" ||
    { echo "FAILED: no mpi replicas"; exit 1; }
  check "mpirun -np 2 --mpi agrees with sim:0" 'a - b < 0.005 && b - a < 0.005' "${acc[sim:0]}" \
      "$(accuracy "$out")"
else
  echo "SKIPPED: the --mpi run (no mpirun; tools/setup.sh installs openmpi-bin)"
fi

# Resume: 25 steps, checkpoint, resume to 60 == 60 steps straight (same shuffles,
# same Adam state, same numbers).
short="--place=cpu --train_examples=1280 --test_examples=500 --log_every=10 --batch_size=32"
numbers() { grep -oP '(loss|test accuracy) [0-9.]+' <<<"$1" | tail -4; }  # of steps 40..60
straight=$(numbers "$("$bin" $short --max_steps=60)")
"$bin" $short --max_steps=25 --checkpoint_dir="$TEST_TMPDIR/ckpt" >/dev/null
resumed=$("$bin" $short --max_steps=60 --checkpoint_dir="$TEST_TMPDIR/ckpt" --resume)
echo "$resumed"
grep -q "resumed from .* after step 25 (epoch 1, batch 25)" <<<"$resumed"
[[ "$(numbers "$resumed")" == "$straight" ]] ||
  { echo "FAILED: resumed run differs from the straight one:"; echo "$straight"; exit 1; }
# A checkpoint of another model is refused, naming the variable.
if "$bin" $short --hidden=32 --max_steps=60 --checkpoint_dir="$TEST_TMPDIR/ckpt" --resume \
    2>"$TEST_TMPDIR/err"; then echo "FAILED: resumed another model"; exit 1; fi
grep -q "'layer0.b_0' is \[256\] but this model has \[32\]" "$TEST_TMPDIR/err"

# --metrics_out: one train line per progress line, one eval line per epoch,
# the last accuracy the one printed; a resumed run appends.
m="$TEST_TMPDIR/m.jsonl"
out=$("$bin" $short --max_steps=60 --metrics_out="$m")
[[ $(grep -c '"kind":"train"' "$m") == 6 ]] || { echo "FAILED: train lines"; cat "$m"; exit 1; }
[[ $(grep -c '"kind":"eval"' "$m") == 2 ]] || { echo "FAILED: eval lines"; cat "$m"; exit 1; }
grep -q '^{"kind":"train","step":10,"epoch":1,"loss":[0-9.]*,"examples_per_s":[0-9.]*,"h2d_copies":0,' "$m"
last=$(grep -oP '^\{"kind":"eval","step":60,"epoch":2,"accuracy":\K[0-9.]+(?=\}$)' "$m")
check "last eval line has the final accuracy" 'a - b < 0.00005 && b - a < 0.00005' "$last" \
    "$(accuracy "$out")"
"$bin" $short --max_steps=25 --checkpoint_dir="$TEST_TMPDIR/ckpt2" --metrics_out="$m" >/dev/null
"$bin" $short --max_steps=60 --checkpoint_dir="$TEST_TMPDIR/ckpt2" --resume --metrics_out="$m" \
    >/dev/null
[[ $(grep -c '"kind":"train"' "$m") == 6 ]] || { echo "FAILED: resumed log"; cat "$m"; exit 1; }
if "$bin" $short --metrics_out=/nonexistent/m.jsonl 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q "cannot open --metrics_out file '/nonexistent/m.jsonl'" "$TEST_TMPDIR/err"

# The CNN learns too (a few steps: convolutions are slow on 2 cores).
out=$("$bin" --place=cpu --model=cnn --max_steps=60 --batch_size=32 --train_examples=1920 \
      --test_examples=500 --log_every=10)
echo "$out"
check "cnn loss falls" 'b < a * 0.8' "$(first_loss "$out")" "$(last_loss "$out")"
check "cnn accuracy > 0.5" 'a > 0.5' "$(accuracy "$out")"

# Bad flags and missing data are errors that say what is wrong.
if "$bin" --model=rnn 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q "model must be mlp or cnn, got 'rnn'" "$TEST_TMPDIR/err"
if "$bin" --data_dir=/nonexistent 2>"$TEST_TMPDIR/err"; then exit 1; fi
grep -q "NOT_FOUND.*install Debian's dataset-fashion-mnist" "$TEST_TMPDIR/err"
help=$("$bin" --help 2>&1 || true)  # gflags exits 1 after --help
grep -q -- "-first_layer_on_cpu (put the first layer under" <<<"$help"
echo PASSED
