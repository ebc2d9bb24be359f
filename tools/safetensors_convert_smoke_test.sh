#!/usr/bin/env bash
# The reference implementation's file goes to a checkpoint and back to a
# safetensors file; the listings show each step's tensors.
set -euo pipefail
bin="$(dirname "$0")/safetensors_convert"
ref=framework/persistence/testdata/reference.safetensors
ckpt="$TEST_TMPDIR/model.ckpt"
back="$TEST_TMPDIR/back.safetensors"

out=$("$bin" --in="$ref")
echo "$out"
grep -qx "metadata format = pt" <<<"$out"
grep -qx "f16 float16\[5\] on cpu (F16 in the file)" <<<"$out"
grep -qx "scalar float32\[\] on cpu (F32 in the file)" <<<"$out"
grep -qx "empty float32\[0, 5\] on cpu (F32 in the file)" <<<"$out"
[[ $(grep -c " on cpu " <<<"$out") == 15 ]]

"$bin" --in="$ref" --out="$ckpt" | grep -qx "wrote 15 tensors to $ckpt"
out=$("$bin" --in="$ckpt")
grep -qx "u32 int64\[2\] on cpu" <<<"$out"

"$bin" --in="$ckpt" --out="$back" --metadata=format=pt,producer=tandem
out=$("$bin" --in="$back")
echo "$out"
grep -qx "metadata producer = tandem" <<<"$out"
grep -qx "u32 int64\[2\] on cpu (I64 in the file)" <<<"$out"
grep -qx "bf16 bfloat16\[3\] on cpu (BF16 in the file)" <<<"$out"

if "$bin" --in="$ckpt" --out="$TEST_TMPDIR/x.safetensors" --metadata=novalue 2>"$TEST_TMPDIR/err"; then
  echo "bad --metadata accepted"; exit 1
fi
grep -q "'novalue' is not key=value" "$TEST_TMPDIR/err"
if "$bin" --in="$TEST_TMPDIR/missing.safetensors" 2>"$TEST_TMPDIR/err"; then
  echo "missing file accepted"; exit 1
fi
grep -q "NOT_FOUND: safetensors file '$TEST_TMPDIR/missing.safetensors' does not exist" "$TEST_TMPDIR/err"
echo PASS
