#!/usr/bin/env python3
"""Safetensors interop test data, written and checked by the reference implementation.

The C++ test framework/persistence/safetensors_test.cc cannot run the `safetensors`
package (Bazel tests are offline), so the two directions of the interop check
go through checked-in files:

  * reference -> Tandem: this script writes
    framework/persistence/testdata/reference.safetensors with the reference
    writer; the C++ test loads it and asserts every value exactly (the
    expected values are written out in both files: keep them in step).
  * Tandem -> reference: `--verify FILE` reads a file Tandem wrote with the
    reference reader and checks every dtype, shape, value and the metadata.
    framework/persistence/testdata/tandem_written.safetensors is such a file; the
    C++ test checks that Tandem still writes it byte for byte.

Setup (once; the package is not needed to build or test Tandem):

  python3 -m venv /tmp/stvenv && /tmp/stvenv/bin/pip install safetensors numpy

Regenerate the reference file (from the repository root):

  /tmp/stvenv/bin/python tools/make_safetensors_testdata.py

Check what Tandem writes (after changing the writer, regenerate the golden
file this way, verify it, and check it in):

  bazel run //framework/persistence:safetensors_interop_writer -- \
      $PWD/framework/persistence/testdata/tandem_written.safetensors
  /tmp/stvenv/bin/python tools/make_safetensors_testdata.py \
      --verify framework/persistence/testdata/tandem_written.safetensors
"""

import argparse
import sys

import numpy as np
from safetensors import TensorSpec, deserialize, safe_open, serialize
from safetensors.numpy import load_file

REFERENCE_OUT = "framework/persistence/testdata/reference.safetensors"

METADATA = {"format": "pt", "source": "tools/make_safetensors_testdata.py"}


def reference_tensors():
    """Name -> numpy array; "bf16" is stored as its raw uint16 bits."""
    return {
        "f32": np.array([[1.5, -2.25, 0.0], [3.4028235e38, 1e-45, -0.0]], np.float32),
        "f64": np.array([0.1, -1e300, 2.0**-1074], np.float64),
        "i32": np.array([[-(2**31), 2**31 - 1], [0, -7]], np.int32),
        "i64": np.array([-(2**63), 2**40], np.int64),
        "bool": np.array([True, False, False, True], np.bool_),
        "scalar": np.array(42.0, np.float32),  # 0-d
        "empty": np.zeros((0, 5), np.float32),
        "f16": np.array([1.0, -2.5, 65504.0, 2.0**-24, np.inf], np.float16),
        # 1.5, -123.5, +inf as bfloat16 bits.
        "bf16": np.array([0x3FC0, 0xC2F7, 0x7F80], np.uint16),
        "u8": np.array([0, 200, 255], np.uint8),
        "i8": np.array([-128, 127, -1], np.int8),
        "i16": np.array([-32768, 32767], np.int16),
        "u16": np.array([65535, 1], np.uint16),
        "u32": np.array([2**32 - 1, 7], np.uint32),
        "emb.weight": np.arange(6, dtype=np.float32).reshape(3, 2) * 0.25,
    }


def write_reference(path):
    arrays = reference_tensors()
    specs = {}
    for name, a in arrays.items():
        assert a.flags["C_CONTIGUOUS"], name  # data_ptr must point at row-major bytes
        dtype = "bfloat16" if name == "bf16" else a.dtype.name
        specs[name] = TensorSpec(
            dtype=dtype, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes
        )
    data = bytes(serialize(specs, metadata=METADATA))  # arrays stay alive meanwhile
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path} ({len(data)} bytes, {len(arrays)} tensors)")


# What framework/runtime:safetensors_interop_writer writes (InteropTensors() in
# framework/persistence/safetensors_testdata.cc).
TANDEM_METADATA = {"format": "pt", "producer": "tandem"}


def tandem_tensors():
    return {
        "emb_w": (np.arange(12, dtype=np.float32) * 0.5 - 1.0).reshape(4, 3),
        "fc_b": np.array([0.1, -3e200], np.float64),
        "step": np.array(2**40 + 3, np.int64),  # 0-d
        "ids": np.array([-1, 0, 2**31 - 1], np.int32),
        "mask": np.array([[True, False], [False, True]], np.bool_),
        "empty": np.zeros((0, 4), np.float32),
    }


def verify(path):
    want = tandem_tensors()
    got = load_file(path)
    errors = []
    if sorted(got) != sorted(want):
        errors.append(f"tensors {sorted(got)}, expected {sorted(want)}")
    for name in sorted(set(got) & set(want)):
        g, w = got[name], want[name]
        if g.dtype != w.dtype or g.shape != w.shape:
            errors.append(f"{name}: {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
        elif g.tobytes() != w.tobytes():
            errors.append(f"{name}: values {g.tolist()}, expected {w.tolist()}")
    with safe_open(path, framework="numpy") as f:
        metadata = f.metadata()
    if metadata != TANDEM_METADATA:
        errors.append(f"metadata {metadata}, expected {TANDEM_METADATA}")
    for e in errors:
        print(f"{path}: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"{path}: the reference reader sees the {len(want)} tensors and metadata expected")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=REFERENCE_OUT, help="where to write the reference file")
    parser.add_argument("--verify", metavar="FILE", help="check a Tandem-written file instead")
    args = parser.parse_args()
    if args.verify:
        return verify(args.verify)
    write_reference(args.out)
    # The reference reader must see what was meant (raw bytes: numpy has no bfloat16).
    with open(args.out, "rb") as f:
        back = dict(deserialize(f.read()))
    for name, a in reference_tensors().items():
        assert bytes(back[name]["data"]) == a.tobytes(), name
        assert back[name]["shape"] == list(a.shape), name
    assert back["bf16"]["dtype"] == "BF16" and back["f16"]["dtype"] == "F16"
    return 0


if __name__ == "__main__":
    sys.exit(main())
