#!/usr/bin/env python3
"""Writes the GGUF fixtures of tests/test_gguf.cpp into this directory, with the `gguf` package
(llama.cpp's gguf-py), independently of Wick.

Made with gguf==0.19.0 and numpy==2.4.6 (the script refuses another gguf version: its writer's
layout is what tests/test_gguf.cpp compares Wick's writer with). Run it in a venv of its own:

    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf==0.19.0 numpy==2.4.6
    /tmp/gguf-venv/bin/python tests/data/gguf/make_fixtures.py

Files (tests/test_gguf.cpp states the same values):
  every_type_v3.gguf    metadata of every value type (arrays of each, nested arrays, an empty
                        array, an empty string) and tensors of every plain type, Q8_0 and Q4_K
                        blocks, a 0-d tensor and an empty one; default alignment (32).
  aligned64_v2.gguf     general.alignment 64, three tensors; its version field rewritten to 2
                        (versions 2 and 3 are laid out alike; the package writes only 3).
  big_endian.gguf       the package's big-endian output (refused by Wick).
  writer_reference.gguf the plain GGUFWriter on the inputs that test_gguf.cpp gives Wick's writer:
                        the two files must be byte-identical.
It also writes the seeds of fuzz/fuzz_gguf.cpp into fuzz/seeds/gguf/ (fuzz_seeds below): files
with many entries and nested arrays, and files that break one rule each.
The package's writer refuses empty arrays and skips empty strings, so every_type_v3.gguf is written
by a subclass that packs those too (EmptyArray below); the package's reader reads them back.
"""
import os
import struct
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

PINNED = "0.19.0"
OUT = os.path.dirname(os.path.abspath(__file__))


def package_version():
    from importlib.metadata import version
    return version("gguf")


class EmptyArray(list):
    """An empty metadata array of a given item type (the package cannot infer one from no items)."""

    def __init__(self, item_type):
        super().__init__()
        self.item_type = item_type


class EmptyArrayWriter(gguf.GGUFWriter):
    def _pack_val(self, val, vtype, add_vtype, sub_type=None):
        if isinstance(val, EmptyArray):
            head = self._pack("I", V.ARRAY) if add_vtype else b""
            return head + self._pack("I", val.item_type) + self._pack("Q", 0)
        return super()._pack_val(val, vtype, add_vtype, sub_type)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bf16_bytes(values):
    """float32 -> bfloat16 bits by truncation (the values used are exact in bfloat16)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32) >> 16
    return bits.astype("<u2").view(np.uint8)


# Arrays of every scalar item type: (key suffix, item type, values).
SCALAR_ARRAYS = [
    ("uint8", V.UINT8, [0, 255]),
    ("int8", V.INT8, [-128, 127]),
    ("uint16", V.UINT16, [0, 65535]),
    ("int16", V.INT16, [-32768, 32767]),
    ("uint32", V.UINT32, [0, 4294967295]),
    ("int32", V.INT32, [1, -2, 3]),
    ("float32", V.FLOAT32, [0.5, -1.25]),
    ("bool", V.BOOL, [True, False, True]),
    ("string", V.STRING, ["a", "bc", ""]),
    ("uint64", V.UINT64, [1, 2**64 - 1]),
    ("int64", V.INT64, [-(2**63), 2**63 - 1]),
    ("float64", V.FLOAT64, [0.1, -1e300]),
]


def every_type():
    path = os.path.join(OUT, "every_type_v3.gguf")
    w = EmptyArrayWriter(path, "wicktest")
    w.add_uint8("test.uint8", 255)
    w.add_int8("test.int8", -128)
    w.add_uint16("test.uint16", 65535)
    w.add_int16("test.int16", -32768)
    w.add_uint32("test.uint32", 4294967295)
    w.add_int32("test.int32", -2147483648)
    w.add_float32("test.float32", -2.5)
    w.add_bool("test.bool_true", True)
    w.add_bool("test.bool_false", False)
    w.add_string("test.string", "h\u00e9llo, GGUF")
    w.add_key_value("test.empty_string", "", V.STRING)  # add_string would skip it
    w.add_uint64("test.uint64", 2**64 - 1)
    w.add_int64("test.int64", -(2**63))
    w.add_float64("test.float64", 0.1)
    for suffix, item_type, values in SCALAR_ARRAYS:
        w.add_key_value("test.array_" + suffix, values, V.ARRAY, sub_type=item_type)
    w.add_array("test.nested", [[1, 2], [3]])  # array of arrays of int32
    w.add_array("test.nested_mixed", [[1], ["x", "y"]])  # inner arrays of different item types
    w.add_array("test.nested3", [[[7]]])
    w.add_key_value("test.empty_array", EmptyArray(V.INT32), V.ARRAY)
    w.add_array("test.nested_with_empty", [[1], EmptyArray(V.STRING)])

    w.add_tensor("f32", np.arange(6, dtype=np.float32).reshape(2, 3))  # ne [3, 2]
    w.add_tensor("f16", (np.arange(4, dtype=np.float16) * np.float16(0.5)))  # ne [4]
    w.add_tensor("bf16", bf16_bytes([1.0, -2.0, 0.5, 3.0, -0.25, 8.0]).reshape(2, 6), raw_dtype=Q.BF16)
    w.add_tensor("f64", np.array([0.1, -1e300], dtype=np.float64))
    w.add_tensor("i8", np.array([-128, 127, -1], dtype=np.int8))
    w.add_tensor("i16", np.array([[-32768], [32767]], dtype=np.int16))  # ne [1, 2]
    w.add_tensor("i32_scalar", np.array(7, dtype=np.int32))  # no dimensions
    w.add_tensor("i64", np.array([-(2**63), 2**63 - 1], dtype=np.int64))
    # Quantized tensors are raw blocks here (byte i holds i % 251): the reader does not decode them.
    w.add_tensor("q8_0", (np.arange(68) % 251).astype(np.uint8), raw_dtype=Q.Q8_0)  # 2 blocks
    w.add_tensor("q4_k", (np.arange(288) % 251).astype(np.uint8).reshape(2, 144), raw_dtype=Q.Q4_K)
    w.add_tensor("empty", np.zeros((0, 3), dtype=np.float32))  # ne [3, 0], no bytes
    finish(w)
    return path


def aligned64_v2():
    path = os.path.join(OUT, "aligned64_v2.gguf")
    w = gguf.GGUFWriter(path, "wicktest")
    w.add_custom_alignment(64)
    w.add_tensor("a", np.array([1.0, 2.0, 3.0], dtype=np.float32))
    w.add_tensor("b", (np.arange(34) % 251).astype(np.uint8), raw_dtype=Q.Q8_0)  # 1 block
    w.add_tensor("c", np.arange(5, dtype=np.float16))
    finish(w)
    with open(path, "r+b") as f:
        f.seek(4)
        assert struct.unpack("<I", f.read(4))[0] == 3
        f.seek(4)
        f.write(struct.pack("<I", 2))
    return path


def big_endian():
    path = os.path.join(OUT, "big_endian.gguf")
    w = gguf.GGUFWriter(path, "wicktest", endianess=gguf.GGUFEndian.BIG)
    w.add_tensor("a", np.array([1.0, 2.0], dtype=np.float32))
    finish(w)
    return path


def writer_reference():
    """The same inputs as the byte-identity test of tests/test_gguf.cpp (keep the two in step)."""
    path = os.path.join(OUT, "writer_reference.gguf")
    w = gguf.GGUFWriter(path, "wicktest")
    w.add_uint8("ref.uint8", 200)
    w.add_int8("ref.int8", -100)
    w.add_uint16("ref.uint16", 60000)
    w.add_int16("ref.int16", -30000)
    w.add_uint32("ref.uint32", 4000000000)
    w.add_int32("ref.int32", -2000000000)
    w.add_float32("ref.float32", 0.75)
    w.add_bool("ref.bool", True)
    w.add_string("ref.string", "reference")
    w.add_uint64("ref.uint64", 2**40 + 1)
    w.add_int64("ref.int64", -(2**40) - 1)
    w.add_float64("ref.float64", -0.125)
    w.add_array("ref.tokens", ["<s>", "</s>", "hello"])
    w.add_array("ref.scores", [0.0, -1.5, 2.25])
    w.add_array("ref.nested", [[1, 2], [3]])
    w.add_tensor("weight", np.arange(6, dtype=np.float32).reshape(3, 2))  # ne [2, 3]
    w.add_tensor("bias", np.arange(3, dtype=np.float16))  # ne [3]
    w.add_tensor("blocks", (np.arange(34) % 251).astype(np.uint8), raw_dtype=Q.Q8_0)  # ne [32]
    w.add_tensor("ids", np.array([5, -6, 7, -8, 9], dtype=np.int32))
    finish(w)
    return path


def fuzz_seeds():
    """Seeds for fuzz/fuzz_gguf.cpp (the fixtures above are seeds too): valid files with many
    entries of every type and nested arrays, so that mutations reach the per-entry paths; files
    made by hand, each breaking one rule (so that the fuzzer starts next to each refusal), and one
    with arrays nested 16 deep, the most the reader takes."""
    seeds = os.path.join(OUT, "..", "..", "..", "fuzz", "seeds", "gguf")
    os.makedirs(seeds, exist_ok=True)
    many = os.path.join(seeds, "many_entries.gguf")
    w = EmptyArrayWriter(many, "wicktest")
    for i, (suffix, item_type, values) in enumerate(SCALAR_ARRAYS * 12):
        w.add_key_value(f"many.{suffix}.{i}", values[i % len(values)], item_type)
    w.add_array("many.nested", [[[1, 2], [3]], [[4]], [EmptyArray(V.FLOAT32)]])
    w.add_array("many.tokens", [f"tok{i}" for i in range(100)])
    for i in range(100):
        w.add_tensor(f"blk.{i}.w", np.full(i % 5 + 1, i, dtype=np.float32))
    w.add_tensor("q", (np.arange(34 * 4) % 251).astype(np.uint8).reshape(2, 68), raw_dtype=Q.Q8_0)
    finish(w)

    def header(version, n_tensors, n_kv):
        return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)

    def string(s):
        return struct.pack("<Q", len(s)) + s

    def tensor(name, ne, ggml_type, offset):
        return string(name) + struct.pack(f"<I{len(ne)}QIQ", len(ne), *ne, ggml_type, offset)

    def padded(b):
        return b + b"\0" * (-len(b) % 32)

    ref = open(os.path.join(OUT, "writer_reference.gguf"), "rb").read()
    by_hand = {
        "bad_version_1.gguf": header(1, 0, 0),
        "truncated.gguf": ref[:500],
        "unaligned_offset.gguf": padded(header(3, 1, 0) + tensor(b"w", [4], 0, 8)) + bytes(64),
        "overlap.gguf": padded(header(3, 2, 0) + tensor(b"a", [16], 0, 0) + tensor(b"b", [8], 0, 32))
        + bytes(64),
        "unknown_type.gguf": padded(header(3, 1, 0) + tensor(b"w", [4], 36, 0)) + bytes(32),
        "deep_array.gguf": header(3, 0, 1) + string(b"k") + struct.pack("<I", 9)
        + struct.pack("<IQ", 9, 1) * 15 + struct.pack("<IQ", 4, 1) + struct.pack("<I", 7),
    }
    for name, data in by_hand.items():
        with open(os.path.join(seeds, name), "wb") as f:
            f.write(data)
    return seeds


def check(path, version):
    """The package reads back what was written (the nested arrays flattened, as it does)."""
    r = gguf.GGUFReader(path)
    assert r.fields["GGUF.version"].parts[0][0] == version, path
    return r


def main():
    if package_version() != PINNED:
        sys.exit(f"make_fixtures.py: gguf {package_version()} installed; these fixtures are made with "
                 f"gguf=={PINNED} (pip install gguf=={PINNED})")
    r = check(every_type(), 3)
    empty = r.fields["test.empty_array"].parts  # key length, key, type, item type, length
    assert (empty[3][0], empty[4][0]) == (V.INT32, 0)
    assert r.fields["test.string"].contents() == "h\u00e9llo, GGUF"
    assert [t.name for t in r.tensors][:2] == ["f32", "f16"]
    assert r.tensors[0].data.tolist() == [[0, 1, 2], [3, 4, 5]]
    r = check(aligned64_v2(), 2)
    assert r.alignment == 64 and all(t.data_offset % 64 == 0 for t in r.tensors)
    with open(big_endian(), "rb") as f:
        assert f.read(8) == b"GGUF\x00\x00\x00\x03"
    check(writer_reference(), 3)
    seeds = fuzz_seeds()
    for folder in (OUT, seeds):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".gguf"):
                print(f"{os.path.relpath(os.path.join(folder, name))}: "
                      f"{os.path.getsize(os.path.join(folder, name))} bytes")


if __name__ == "__main__":
    main()
