#!/usr/bin/python3
"""Writes the fixtures of tests/test_safetensors.cpp into tests/data/safetensors/.

The safetensors format is written by hand here (8-byte little-endian header length, JSON header,
data), independently of Wick: valid.safetensors holds one tensor per dtype with values given by
the formulas below (tests/test_safetensors.cpp states the same values), and each corrupt_*.safetensors
breaks one rule of the format. Run it from anywhere: python3 tests/data/make_safetensors_fixtures.py
"""
import json
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "safetensors")


def bf16_bits(values):
    """float32 -> bfloat16 bits, round to nearest even (the values used here are exact anyway)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def valid_tensors():
    """name -> (safetensors dtype, shape, little-endian bytes)."""
    t = {}

    def put(name, dtype, arr, raw=None):
        a = np.asarray(arr)
        t[name] = (dtype, list(a.shape), raw if raw is not None else a.astype(a.dtype.newbyteorder("<")).tobytes())

    put("f64", "F64", np.array([0.1, -2.5, 1e300], dtype=np.float64))
    put("f32", "F32", (np.arange(6, dtype=np.float32) * 0.5 - 1.0).reshape(2, 3))  # [[-1,-.5,0],[.5,1,1.5]]
    put("f16", "F16", np.array([[1.0, -2.0], [0.5, 65504.0]], dtype=np.float16))
    bf = np.array([1.0, -3.0, 0.15625], dtype=np.float32)
    put("bf16", "BF16", bf, bf16_bits(bf).astype("<u2").tobytes())
    put("i64", "I64", np.array([-(2**63), 2**63 - 1, 0, 42], dtype=np.int64))
    put("i32", "I32", np.arange(-3, 3, dtype=np.int32).reshape(3, 1, 2))
    put("i16", "I16", np.array([-32768, 32767], dtype=np.int16))
    put("i8", "I8", np.array([-128, 127, -1], dtype=np.int8))
    put("u8", "U8", np.array([[0, 255], [7, 8]], dtype=np.uint8))
    put("u64", "U64", np.array([2**64 - 1, 1], dtype=np.uint64))
    put("u32", "U32", np.array([4294967295], dtype=np.uint32))
    put("bool", "BOOL", np.array([True, False, True, True, False], dtype=np.bool_))
    put("scalar", "F32", np.array(3.25, dtype=np.float32))  # shape []
    put("empty", "F32", np.zeros((0, 3), dtype=np.float32))  # no bytes
    put("nested.layer.weight", "F32", np.arange(4, dtype=np.float32).reshape(2, 2))
    return t


def pack(entries, metadata=None, header_override=None, pad=True, data=None):
    """entries: list of (name, dtype, shape, bytes), laid out in this order."""
    header, blob, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blob += raw
        offset += len(raw)
    text = header_override if header_override is not None else json.dumps(header).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + (blob if data is None else data)


def raw_file(header_obj, data):
    text = json.dumps(header_obj).encode()
    return struct.pack("<Q", len(text)) + text + data


def f32(n):
    return np.arange(n, dtype="<f4").tobytes()


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {}

    # Not in name order, so offsets must be honoured.
    t = valid_tensors()
    order = ["u8", "f64", "bool", "scalar", "i16", "f32", "empty", "bf16", "i64", "i32", "i8",
             "u64", "f16", "u32", "nested.layer.weight"]
    assert sorted(order) == sorted(t)
    valid = pack([(n,) + t[n] for n in order], metadata={"format": "pt", "source": "wick-fixture"})
    files["valid.safetensors"] = valid

    e = lambda dtype, shape, offsets: {"dtype": dtype, "shape": shape, "data_offsets": offsets}
    files["corrupt_too_short.safetensors"] = b"\x05\x00\x00"
    files["corrupt_header_too_big.safetensors"] = struct.pack("<Q", 2**40) + b"{}"
    files["corrupt_header_past_end.safetensors"] = struct.pack("<Q", 1000) + b'{"a": 1}'
    files["corrupt_truncated.safetensors"] = valid[: len(valid) - 5]
    files["corrupt_bad_json.safetensors"] = pack([], header_override=b'{"weight": {"dtype": "F32",')
    files["corrupt_not_object.safetensors"] = pack([], header_override=b'[1, 2, 3]')
    files["corrupt_offsets_out_of_range.safetensors"] = raw_file(
        {"weight": e("F32", [4], [0, 400])}, f32(4))
    files["corrupt_offsets_reversed.safetensors"] = raw_file(
        {"weight": e("F32", [0], [16, 0])}, f32(4))
    files["corrupt_overlap.safetensors"] = raw_file(
        {"alpha": e("F32", [4], [0, 16]), "beta": e("F32", [4], [8, 24])}, f32(6))
    files["corrupt_hole.safetensors"] = raw_file(
        {"alpha": e("F32", [1], [0, 4]), "beta": e("F32", [1], [8, 12])}, f32(3))
    files["corrupt_trailing.safetensors"] = raw_file({"alpha": e("F32", [2], [0, 8])}, f32(3))
    files["corrupt_shape_bytes.safetensors"] = raw_file({"weight": e("F32", [2, 3], [0, 20])}, f32(5))
    files["corrupt_unknown_dtype.safetensors"] = raw_file({"weight": e("Q7", [1], [0, 4])}, f32(1))
    files["corrupt_f8_dtype.safetensors"] = raw_file({"weight": e("F8_E4M3", [4], [0, 4])}, b"\0" * 4)
    files["corrupt_negative_dim.safetensors"] = raw_file({"weight": e("F32", [-2, 3], [0, 24])}, f32(6))
    files["corrupt_huge_dims.safetensors"] = raw_file(
        {"weight": e("F32", [2**40, 2**40], [0, 4])}, f32(1))
    files["corrupt_dim_too_large.safetensors"] = raw_file(
        {"weight": e("U8", [2**64 - 1], [0, 1])}, b"\0")
    files["corrupt_float_dim.safetensors"] = raw_file({"weight": e("F32", [2.5], [0, 8])}, f32(2))
    files["corrupt_missing_offsets.safetensors"] = raw_file(
        {"weight": {"dtype": "F32", "shape": [1]}}, f32(1))
    files["corrupt_unknown_field.safetensors"] = raw_file(
        {"weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "scale": 2}}, f32(1))
    files["corrupt_bool_value.safetensors"] = raw_file({"mask": e("BOOL", [3], [0, 3])}, b"\x01\x02\x00")
    files["corrupt_metadata.safetensors"] = raw_file(
        {"__metadata__": {"epoch": 3}, "weight": e("F32", [1], [0, 4])}, f32(1))
    dup = b'{"weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, ' \
          b'"weight": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}'
    files["corrupt_duplicate.safetensors"] = struct.pack("<Q", len(dup)) + dup + f32(2)
    deep = b'{"weight": {"dtype": "F32", "shape": [[[[[[1]]]]]], "data_offsets": [0, 4]}}'
    files["corrupt_deep.safetensors"] = struct.pack("<Q", len(deep)) + deep + f32(1)

    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {OUT}")


if __name__ == "__main__":
    main()
