"""Golden cases of the GGML block ops (ABI 1.4): quantize, dequantize and matmul_quant. The blocks and
their values are tests/data/ggml_quants/fixtures.bin, which that directory's make_fixtures.py made with
the `gguf` package's NumPy reference (gguf.quants) and llama.cpp's own C reference, asserting that the
two agree where both cover a type; never with Wick. quantize and dequantize are exact; matmul_quant is
x times the fixture's dequantized weights, summed exactly here."""
import math
import os
import struct

import numpy as np

from cases import FLOATS, Operand, add_case, expected_json, gen_values, rng_for, round_float

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "ggml_quants",
                        "fixtures.bin")

# name: (GGML type number, values per block, bytes per block)
TYPES = {"Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24),
         "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36), "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110),
         "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292)}
ROW = 256  # values per row: a whole number of blocks of every type


def read_fixtures():
    """{name: bytes (kind 0) or float32 array (kind 1)} of the fixture file's records."""
    data = open(FIXTURES, "rb").read()
    out, i = {}, 0
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        name = data[i + 4:i + 4 + n].decode()
        kind, size = struct.unpack_from("<II", data, i + 4 + n)
        payload = data[i + 12 + n:i + 12 + n + size]
        out[name] = np.frombuffer(payload, dtype="<f4").astype(np.float64) if kind == 1 else payload
        i += 12 + n + size
    return out


def blocks_operand(raw, row_bytes):
    return Operand("u8", np.frombuffer(raw, dtype=np.uint8).reshape(-1, row_bytes).astype(np.int64))


def family_quant():
    fx = read_fixtures()
    x = fx["input"].reshape(-1, ROW)
    for name, (code, block, size) in TYPES.items():
        row_bytes = ROW // block * size
        params = {"type": code, "k": ROW}
        q = fx[name + ".quant"]
        add_case("quantize", name, "f32", [Operand("f32", x)],
                 [expected_json("u8", np.frombuffer(q, dtype=np.uint8).reshape(-1, row_bytes).astype(np.int64))],
                 params=params)
        if name + ".dequant" not in fx:
            continue
        for src, suffix in ((".quant", ".dequant"), (".random", ".random.dequant")):
            values = fx[name + suffix].reshape(-1, ROW)
            for dt in FLOATS if src == ".random" else ["f32"]:  # the other dtypes: the small set
                cid = "%s%s/%s" % (name, "/random-blocks" if src == ".random" else "", dt)
                # Exact: the f32 values rounded once to dt (dequantize's definition).
                add_case("dequantize", cid, "u8->" + dt, [blocks_operand(fx[name + src], row_bytes)],
                         [expected_json(dt, round_float(values, dt))], params=params)
        w = fx[name + ".dequant"].reshape(-1, ROW)
        for dt in FLOATS:
            cid = "%s/%s" % (name, dt)
            xs = Operand(dt, gen_values(rng_for("matmul_quant", cid), dt, [3, ROW], (-1, 1)))
            xv = np.asarray(xs.values, dtype=np.float64)
            exp = np.empty((3, w.shape[0]), dtype=object)
            scale = np.zeros((3, w.shape[0]))
            for r in range(3):
                for j in range(w.shape[0]):
                    terms = xv[r] * w[j]
                    exp[r, j] = math.fsum(terms.tolist())
                    scale[r, j] = float(np.abs(terms).sum())
            add_case("matmul_quant", cid, dt, [xs, blocks_operand(q, row_bytes)], [expected_json(dt, exp, scale)],
                     params=params, tol="matmul", k=ROW)
