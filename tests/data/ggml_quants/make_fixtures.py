#!/usr/bin/env python3
"""Writes fixtures.bin, the reference data of tests/test_ggml_quants.cpp: GGML's block formats
quantized and dequantized by the two references Wick's sdk/include/wick/sdk/ggml_quants*.hpp must
match bit for bit, never by Wick:

- the `gguf` package's NumPy code (gguf.quants; pinned below), which quantizes Q4_0, Q4_1, Q5_0,
  Q5_1 and Q8_0 and dequantizes those and Q2_K..Q6_K;
- llama.cpp's own C reference (ggml-quants.c: quantize_row_*_ref, dequantize_row_*), called through
  ctypes in libggml-base, built from the llama.cpp vendored in llama-cpp-python's sdist (pinned
  below; its PyPI wheels are not prebuilt for Linux). The script builds it (one core, under a minute)
  unless --libggml names one already built:

      python3 -m venv /tmp/gq && /tmp/gq/bin/pip install gguf==0.19.0 numpy
      /tmp/gq/bin/python tests/data/ggml_quants/make_fixtures.py [--libggml .../libggml-base.so]

Where both references cover a type, the script asserts that they agree byte for byte (quantize) and
bit for bit (dequantize) before writing one copy. The activation rows (act.input, Q8_0.act, Q8_1.act,
Q8_K.act: MATMUL_QUANT's rounded x, ABI 1.6) are quantized by NumPy (gguf.quants' Q8_0, and this
script's Q8_1 and Q8_K, which gguf.quants lacks) and asserted equal to llama.cpp's reference. The file is a list of records, little-endian:
u32 name length, name, u32 kind (0 bytes, 1 f32, 2 UTF-8 text), u32 payload bytes, payload.
"""
import argparse
import ctypes
import importlib.metadata
import pathlib
import struct
import subprocess
import tarfile

import numpy as np

GGUF_VERSION = "0.19.0"
LLAMA_CPP_PYTHON = "0.3.36"  # vendors llama.cpp's ggml 0.25.3, commit 0c1e570

HERE = pathlib.Path(__file__).resolve().parent
QK_K = 256

# name, ggml type number, block size, bytes per block, f16 fields (byte offsets) of a block,
# whether gguf.quants quantizes it, whether gguf.quants dequantizes it, whether ggml dequantizes it.
TYPES = [
    ("Q4_0", 2, 32, 18, [0], True, True, True),
    ("Q4_1", 3, 32, 20, [0, 2], True, True, True),
    ("Q5_0", 6, 32, 22, [0], True, True, True),
    ("Q5_1", 7, 32, 24, [0, 2], True, True, True),
    ("Q8_0", 8, 32, 34, [0], True, True, True),
    ("Q8_1", 9, 32, 36, [0, 2], False, False, False),
    ("Q2_K", 10, QK_K, 84, [80, 82], False, True, True),
    ("Q3_K", 11, QK_K, 110, [108], False, True, True),
    ("Q4_K", 12, QK_K, 144, [0, 2], False, True, True),
    ("Q5_K", 13, QK_K, 176, [0, 2], False, True, True),
    ("Q6_K", 14, QK_K, 210, [208], False, True, True),
    ("Q8_K", 15, QK_K, 292, [], False, False, True),  # d is an f32 at offset 0
]


def build_libggml(work: pathlib.Path) -> pathlib.Path:
    lib = work / "build/bin/libggml-base.so"
    if lib.exists():
        return lib
    work.mkdir(parents=True, exist_ok=True)
    sdist = work / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
    if not sdist.exists():
        subprocess.run(["python3", "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(work)], check=True)
    with tarfile.open(sdist) as t:
        t.extractall(work, filter="data")
    src = work / f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp"
    # Baseline x86-64 (no FMA): the reference's float expressions are evaluated as written.
    subprocess.run(["cmake", "-S", str(src), "-B", str(work / "build"), "-DCMAKE_BUILD_TYPE=Release",
                    "-DBUILD_SHARED_LIBS=ON", "-DGGML_NATIVE=OFF", "-DGGML_OPENMP=OFF",
                    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=OFF",
                    "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_CURL=OFF", "-DGGML_CCACHE=OFF"], check=True)
    subprocess.run(["cmake", "--build", str(work / "build"), "--target", "ggml-base", "-j1"], check=True)
    return lib


class Ggml:
    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        for f, t in [("ggml_version", ctypes.c_char_p), ("ggml_commit", ctypes.c_char_p),
                     ("ggml_type_name", ctypes.c_char_p), ("ggml_type_size", ctypes.c_size_t),
                     ("ggml_blck_size", ctypes.c_int64)]:
            getattr(self.lib, f).restype = t
        assert self.lib.ggml_version() == b"0.25.3", self.lib.ggml_version()

    def quantize(self, name, x, type_size, block):
        out = np.zeros(x.size // block * type_size, np.uint8)  # ggml leaves Q8_K's bsums of a zero block unset
        getattr(self.lib, f"quantize_row_{name.lower().replace('_k', '_K')}_ref")(
            ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_int64(x.size))
        return out

    def dequantize(self, name, blocks, n):
        out = np.zeros(n, np.float32)
        getattr(self.lib, f"dequantize_row_{name.lower().replace('_k', '_K')}")(
            ctypes.c_void_p(blocks.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_int64(n))
        return out


def make_input(rng):
    """8 super-blocks (2048 values = 64 blocks of 32), each probing one regime of the quantizers."""
    sb = []
    sb.append(rng.standard_normal(QK_K))
    # Sub-blocks of 32 at very different magnitudes: the K-quants' 6-bit sub-block scales.
    sb.append(rng.standard_normal(QK_K) * np.repeat(10.0 ** rng.uniform(-3, 2, 8), 32))
    sb.append(rng.uniform(0, 1, QK_K) + 0.25)  # positive only: a non-zero min
    sb.append(-np.abs(rng.standard_normal(QK_K)) * 5)  # negative only
    heavy = rng.standard_normal(QK_K) * 0.01
    heavy[rng.choice(QK_K, 5, replace=False)] = [1e4, -3e3, 250.0, -1e4, 7.0]  # outliers
    sb.append(heavy)
    mixed = rng.standard_normal(QK_K)
    mixed[0:64] = 0  # zero sub-blocks
    mixed[64:96] = 0.75  # constant
    mixed[96:128] = np.tile(np.arange(-8, 8), 2)  # integers: on a grid
    mixed[128:160] = rng.standard_normal(32) * 1e-6  # scales below f16's normal range
    mixed[160:192] = rng.standard_normal(32) * 1e-9  # ... and rounding to zero in f16
    sb.append(mixed)
    sb.append((np.arange(QK_K) % 17 - 8) * 0.25)  # exact halves: rounding ties
    sb.append(np.zeros(QK_K))  # all zero
    return np.concatenate(sb).astype(np.float32)


def random_blocks(rng, count, type_size, f16_offsets, q8k):
    """Any bit pattern is a valid block once its scales are finite: random bytes, random scales."""
    b = rng.integers(0, 256, (count, type_size), dtype=np.uint8)
    scales = (rng.standard_normal((count, 2)) * 10.0 ** rng.uniform(-4, 1, (count, 2)))
    scales[0, 0] = 6e-8  # an f16 subnormal
    for k, off in enumerate(f16_offsets):
        b[:, off:off + 2] = scales[:, k].astype(np.float16).view(np.uint8).reshape(count, 2)
    if q8k:
        b[:, 0:4] = scales[:, 0].astype(np.float32).view(np.uint8).reshape(count, 4)
    return b.reshape(-1)


def make_act_input(rng):
    """4 rows of 256 values for the activation quantizers (MATMUL_QUANT's WICK_QUANT_ROUND_X, ABI
    1.6): a plain row; blocks of 32 at very different magnitudes; exact ties (blocks whose largest
    |x| is 127, so that x / d is x: halves round away from zero in Q8_0 and Q8_1, to even in Q8_K);
    zeros, a constant and outliers."""
    plain = rng.standard_normal(QK_K)
    scaled = rng.standard_normal(QK_K) * np.repeat(10.0 ** rng.uniform(-4, 2, 8), 32)
    ties = np.tile(np.concatenate([[127.0, -126.5], np.arange(-14.5, 15.5, 1.0)]), 8)[:QK_K]
    ties[128] = -127.0  # Q8_K's largest |x| negative: iscale = -127 / max = 1
    mixed = rng.standard_normal(QK_K) * 0.1
    mixed[0:32] = 0
    mixed[32:64] = 0.3
    mixed[100], mixed[200] = 50.0, -80.0
    return np.concatenate([plain, scaled, ties, mixed]).astype(np.float32)


def numpy_q8_1(x):
    """ggml's quantize_row_q8_1_ref in NumPy (gguf.quants has no Q8_1): Q8_0's d and roundf quants,
    then s = fp16(sum(q) * d) from the unrounded d."""
    from gguf.quants import np_roundf
    b = x.reshape(-1, 32).astype(np.float32)
    d = (np.abs(b).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idd = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    q = np_roundf((b * idd).astype(np.float32)).astype(np.int8)
    s = (q.astype(np.int32).sum(axis=1, keepdims=True).astype(np.float32) * d).astype(np.float32)
    return np.concatenate([d.astype(np.float16).view(np.uint8), s.astype(np.float16).view(np.uint8),
                           q.view(np.uint8)], axis=1).reshape(-1)


def numpy_q8_k(x):
    """ggml's quantize_row_q8_K_ref in NumPy (gguf.quants has no Q8_K): per 256 values, max = the
    value of largest |x| (the first such), iscale = -127 / max, q = min(127, nearest_int(iscale x))
    (ggml's nearest_int rounds halves to even, as np.rint), bsums per 16, d = 1 / iscale; an
    all-zero block is d 0, q 0, bsums 0."""
    out = []
    for blk in x.reshape(-1, QK_K).astype(np.float32):
        i = int(np.argmax(np.abs(blk)))  # argmax takes the first of equal |x|, as ggml's strict >
        if blk[i] == 0:
            out.append(np.zeros(292, np.uint8))
            continue
        iscale = np.float32(-127.0) / blk[i]
        q = np.minimum(127, np.rint((iscale * blk).astype(np.float32))).astype(np.int8)
        bsums = q.astype(np.int16).reshape(16, 16).sum(axis=1).astype("<i2")
        d = np.array([np.float32(1.0) / iscale], "<f4")
        out.append(np.concatenate([d.view(np.uint8), q.view(np.uint8), bsums.view(np.uint8)]))
    return np.concatenate(out)


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libggml", help="libggml-base.so of llama-cpp-python's vendored llama.cpp")
    ap.add_argument("--work", default="/tmp/wick-ggml-ref", help="where to build it otherwise")
    args = ap.parse_args()

    assert importlib.metadata.version("gguf") == GGUF_VERSION, "pip install gguf==" + GGUF_VERSION
    from gguf import quants
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    ggml = Ggml(args.libggml or build_libggml(pathlib.Path(args.work)))
    rng = np.random.default_rng(20260426)
    records = []

    def add(name, kind, payload):
        records.append((name, kind, payload))

    add("meta", 2, (f"gguf {GGUF_VERSION}, numpy {np.__version__}, llama.cpp ggml "
                    f"{ggml.lib.ggml_version().decode()} (commit {ggml.lib.ggml_commit().decode()}, "
                    f"from llama-cpp-python {LLAMA_CPP_PYTHON})\n").encode())
    # The type table as each reference states it: number, name, gguf's block size and bytes,
    # ggml's (ggml_blck_size, ggml_type_size).
    lines = []
    for t, (bs, ts) in GGML_QUANT_SIZES.items():
        lines.append(f"{t.value} {t.name} {bs} {ts} {ggml.lib.ggml_blck_size(t.value)} "
                     f"{ggml.lib.ggml_type_size(t.value)}")
        assert ggml.lib.ggml_type_name(t.value).decode().upper() == t.name, t.name
    add("sizes", 2, ("\n".join(lines) + "\n").encode())

    x = make_input(rng)
    add("input", 1, x.tobytes())
    for name, num, block, type_size, f16s, gq, gdq, dq in TYPES:
        qt = GGMLQuantizationType(num)
        q = ggml.quantize(name, x, type_size, block)
        if gq:
            assert same_bits(quants.quantize(x.reshape(-1, block), qt).reshape(-1), q), name
        add(f"{name}.quant", 0, q.tobytes())
        count = 16 if block == 32 else 4
        r = random_blocks(rng, count, type_size, f16s, name == "Q8_K")
        for tag, blocks, n in [("", q, x.size), ("random.", r, count * block)]:
            if not dq:
                continue
            y = ggml.dequantize(name, blocks, n)
            if gdq:
                assert same_bits(quants.dequantize(blocks.reshape(-1, type_size), qt).reshape(-1), y), name
            if tag:
                add(f"{name}.random", 0, blocks.tobytes())
            add(f"{name}.{tag}dequant", 1, y.tobytes())
        print(name, "quantize:", "gguf = ggml" if gq else "ggml",
              "| dequantize:", "gguf = ggml" if gdq else "ggml" if dq else "none")

    # The activation types (ggml's vec_dot_type) quantized by NumPy (gguf.quants for Q8_0, this
    # script's for Q8_1 and Q8_K), each asserted to be llama.cpp's reference byte for byte.
    xa = make_act_input(rng)
    add("act.input", 1, xa.tobytes())
    for name, mine in [("Q8_0", lambda v: quants.quantize(v.reshape(-1, 32), GGMLQuantizationType.Q8_0).reshape(-1)),
                       ("Q8_1", numpy_q8_1), ("Q8_K", numpy_q8_k)]:
        type_size = {"Q8_0": 34, "Q8_1": 36, "Q8_K": 292}[name]
        q = mine(xa)
        assert same_bits(q, ggml.quantize(name, xa, type_size, 32 if name != "Q8_K" else QK_K)), name
        add(f"{name}.act", 0, q.tobytes())
        print(name, "activation rows: numpy = ggml")

    out = bytearray()
    for name, kind, payload in records:
        out += struct.pack("<I", len(name)) + name.encode() + struct.pack("<II", kind, len(payload)) + payload
    (HERE / "fixtures.bin").write_bytes(bytes(out))
    print("fixtures.bin:", len(out), "bytes")


if __name__ == "__main__":
    main()
