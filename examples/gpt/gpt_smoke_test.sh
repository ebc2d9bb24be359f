#!/usr/bin/env bash
# Short runs of the GPT trainer on the CPU and on sim:0: the loss falls
# well below a uniform guess over bytes (ln 256 = 5.55), the validation
# perplexity is printed, a run resumed from its checkpoint continues the
# uninterrupted run's losses, --amp=bf16 learns too, --recompute=cheap
# gives the same losses with less device memory, and a missing or
# binary corpus is a clear error. The corpus is Debian's fortunes when
# installed (tools/setup.sh), else a text written here.
set -euo pipefail
bin="$(dirname "$0")/gpt"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
corpus=/usr/share/games/fortunes
if [[ ! -d "$corpus" ]]; then
  corpus="$tmp/corpus.txt"
  for i in $(seq 1 400); do
    echo "Line $i: the quick brown fox jumps over the lazy dog, and the dog sleeps on."
  done > "$corpus"
fi
small="--corpus=$corpus --layers=2 --width=64 --heads=4 --seq=32 --batch_size=8 --lr=3e-3"
small+=" --eval_every=100 --eval_batches=4 --log_every=25"
first_loss() { grep -oP '^step \d+/\d+  loss \K[0-9.]+' <<<"$1" | head -1; }
last_loss() { grep -oP '^step \d+/\d+  loss \K[0-9.]+' <<<"$1" | tail -1; }
validation() { grep -oP 'validation loss \K[0-9.]+' <<<"$1" | tail -1; }
check() {  # check NAME AWK-CONDITION VALUES...
  local name=$1 cond=$2; shift 2
  awk -v a="${1:-}" -v b="${2:-}" "BEGIN { exit !($cond) }" || { echo "FAILED: $name ($*)"; exit 1; }
}

for place in cpu sim:0; do
  out=$("$bin" $small --place=$place --steps=200)
  echo "$out"
  check "loss falls on $place" 'b < a - 0.8 && b < 3.2' "$(first_loss "$out")" "$(last_loss "$out")"
  grep -qP '^step 200  validation loss [0-9.]+  perplexity [0-9.]+  [0-9.]+ bits/byte$' <<<"$out" ||
    { echo "FAILED: no validation line on $place"; exit 1; }
  check "validation loss below 3.5 on $place" 'a < 3.5' "$(validation "$out")"
done

# Resume: 100 steps, then 100 more from the checkpoint, equal the 200-step run.
whole=$("$bin" $small --place=cpu --steps=200 --checkpoint_dir="$tmp/whole")
"$bin" $small --place=cpu --steps=100 --checkpoint_dir="$tmp/resumed" > /dev/null
resumed=$("$bin" $small --place=cpu --steps=200 --checkpoint_dir="$tmp/resumed" --resume)
echo "$resumed"
grep -q "resumed from $tmp/resumed/checkpoint after step 100" <<<"$resumed" ||
  { echo "FAILED: did not resume"; exit 1; }
loss200() { grep -oP '^step 200/200  loss [0-9.]+|^step 200  validation loss [0-9.]+' <<<"$1"; }
[[ -n "$(loss200 "$whole")" && "$(loss200 "$whole")" == "$(loss200 "$resumed")" ]] ||
  { echo "FAILED: the resumed run's step 200 differs"; exit 1; }

out=$("$bin" $small --place=cpu --steps=200 --amp=bf16)
check "bf16 loss falls" 'b < a - 0.8 && b < 3.4' "$(first_loss "$out")" "$(last_loss "$out")"

# Optimizer offload: the same losses as the run that keeps Adam on the device.
on_device=$("$bin" $small --place=sim:0 --steps=100 --amp=bf16)
offloaded=$("$bin" $small --place=sim:0 --steps=100 --amp=bf16 --offload=optimizer --print_placement)
profiled=$("$bin" $small --place=sim:0 --steps=6 --amp=bf16 --offload=optimizer --profile_steps=3)
grep -q "optimizer offloaded to the cpu" <<<"$offloaded" || { echo "FAILED: no offload"; exit 1; }
grep -qE "adam +cpu +param" <<<"$offloaded" || { echo "FAILED: adam not on the cpu"; exit 1; }
grep -q "Optimizer on the Host" <<<"$profiled" || { echo "FAILED: no host optimizer section"; exit 1; }
grep -qP "Bytes down sim:0->cpu +[0-9.]+ MB \(gradients (?!0\.000 )[0-9.]+ MB" <<<"$profiled" ||
  { echo "FAILED: no gradients down in the profile"; exit 1; }
losses() { grep -oP '^step \d+/\d+  loss [0-9.]+|validation loss [0-9.]+' <<<"$1"; }
[[ -n "$(losses "$on_device")" && "$(losses "$on_device")" == "$(losses "$offloaded")" ]] ||
  { echo "FAILED: offload changed the losses"; exit 1; }
# --offload=auto under a budget half way between the all-device and the
# all-host peaks: a partial offload, the same losses, the estimate in budget.
peak() { grep -oP "est. peak sim:0 \K[0-9.]+(?= MiB)" <<<"$1" | head -1; }
none=$("$bin" $small --place=sim:0 --steps=2 --amp=bf16 --offload=optimizer --offload_fraction=0)
all=$("$bin" $small --place=sim:0 --steps=2 --amp=bf16 --offload=optimizer)
echo "est. peaks: none offloaded $(peak "$none") MiB, all $(peak "$all") MiB"
budget_mb=$(awk -v a="$(peak "$none")" -v b="$(peak "$all")" 'BEGIN { print int((a + b) / 2) }')
awk -v a="$(peak "$all")" -v m="$budget_mb" -v n="$(peak "$none")" 'BEGIN { exit !(a < m && m < n) }' ||
  { echo "FAILED: no whole MiB between the peaks"; exit 1; }
auto=$("$bin" $small --place=sim:0 --steps=100 --amp=bf16 --offload=auto --memory_budget_mb=$budget_mb)
echo "$auto" | grep "optimizer offload"
grep -qP "budget $budget_mb.0 MiB; [1-9]\d* of 29 parameters on the host" <<<"$auto" ||
  { echo "FAILED: not a partial offload"; exit 1; }
[[ "$(losses "$on_device")" == "$(losses "$auto")" ]] || { echo "FAILED: auto changed the losses"; exit 1; }
if "$bin" $small --place=sim:0 --steps=1 --amp=bf16 --offload=auto --memory_budget_mb=1 2> "$tmp/err"; then
  echo "FAILED: no error"; exit 1
fi
grep -q "the smallest budget that would fit (memory_budget_mb=" "$tmp/err" || { echo "FAILED: $(cat "$tmp/err")"; exit 1; }
if "$bin" $small --steps=1 --offload=optimizer 2> "$tmp/err"; then echo "FAILED: no error"; exit 1; fi
grep -q "needs --amp" "$tmp/err" || { echo "FAILED: $(cat "$tmp/err")"; exit 1; }

# Recomputation: the offloaded run's losses again, with a smaller device peak.
recomputed=$("$bin" $small --place=sim:0 --steps=100 --amp=bf16 --offload=optimizer --recompute=cheap \
  --profile_steps=3)
grep -q "recomputing cheap activations" <<<"$recomputed" || { echo "FAILED: no recompute"; exit 1; }
grep -qP "^Per steady-state step, .*: \d+ forward ops run again in the backward" <<<"$recomputed" ||
  { echo "FAILED: no Recomputation section in the profile"; exit 1; }
[[ "$(losses "$offloaded")" == "$(losses "$recomputed")" ]] ||
  { echo "FAILED: recompute changed the losses"; exit 1; }
measured() { grep -oP "sim:0 est. peak [0-9]+ bytes \([^)]*\), measured \K[0-9]+" <<<"$1"; }
echo "measured peaks: kept $(measured "$offloaded"), recomputed $(measured "$recomputed")"
check "recompute lowers the measured peak" 'b < a' "$(measured "$offloaded")" "$(measured "$recomputed")"
if "$bin" $small --steps=1 --recompute=everything 2> "$tmp/err"; then echo "FAILED: no error"; exit 1; fi
grep -q "unknown value 'everything'; accepted: none, cheap, cheap+weights" "$tmp/err" || { echo "FAILED: $(cat "$tmp/err")"; exit 1; }

if "$bin" --corpus=/no/such/file --steps=1 2> "$tmp/err"; then echo "FAILED: no error"; exit 1; fi
grep -q "does not exist" "$tmp/err" || { echo "FAILED: $(cat "$tmp/err")"; exit 1; }
printf 'abc\0def' > "$tmp/binary"
if "$bin" --corpus="$tmp/binary" --steps=1 2> "$tmp/err"; then echo "FAILED: no error"; exit 1; fi
grep -q "is not text: a NUL byte at offset 3" "$tmp/err" || { echo "FAILED: $(cat "$tmp/err")"; exit 1; }
echo PASSED
