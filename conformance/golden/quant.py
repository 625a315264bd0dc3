"""Golden cases of the GGML block ops (ABI 1.4): quantize, dequantize and matmul_quant. The blocks and
their values are tests/data/ggml_quants/fixtures.bin, which that directory's make_fixtures.py made with
the `gguf` package's NumPy reference (gguf.quants) and llama.cpp's own C reference, asserting that the
two agree where both cover a type; never with Wick. quantize and dequantize are exact; matmul_quant is
x times the fixture's dequantized weights, summed exactly here. The flagged matmul_quant cases
(flags = WICK_QUANT_ROUND_X, ABI 1.6) multiply the fixture's activation rows rounded to the weight type's
8-bit activation type by NumPy (make_fixtures.py: gguf.quants' Q8_0, its own Q8_1 and Q8_K, each equal to
llama.cpp's reference), dequantized here (d * q), by the dequantized weights."""
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
# The weight type's activation type (ggml's vec_dot_type): what WICK_QUANT_ROUND_X rounds x to.
ACT = {"Q4_0": "Q8_0", "Q5_0": "Q8_0", "Q8_0": "Q8_0", "Q4_1": "Q8_1", "Q5_1": "Q8_1", "Q8_1": "Q8_1",
       "Q2_K": "Q8_K", "Q3_K": "Q8_K", "Q4_K": "Q8_K", "Q5_K": "Q8_K", "Q6_K": "Q8_K", "Q8_K": "Q8_K"}
ROUND_X = 1  # WICK_QUANT_ROUND_X


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


def dequantize_act(name, raw):
    """Rows of Q8_0 / Q8_1 (f16 d, [f16 s,] int8 q[32]) or Q8_K (f32 d, int8 q[256], int16 sums[16])
    blocks as float64 values d * q (exact)."""
    b = np.frombuffer(raw, dtype=np.uint8)
    if name == "Q8_K":
        b = b.reshape(-1, 292)
        d = b[:, 0:4].copy().view("<f4").astype(np.float64)
        q = b[:, 4:260].copy().view(np.int8).astype(np.float64)
    else:
        b = b.reshape(-1, 34 if name == "Q8_0" else 36)
        d = b[:, 0:2].copy().view("<f2").astype(np.float64)
        q = b[:, b.shape[1] - 32:].copy().view(np.int8).astype(np.float64)
    return (d * q).reshape(-1, ROW)


def exact_products(xv, w):
    """x w^T summed exactly (math.fsum), with the sums of |terms| as the tolerance's scale."""
    exp = np.empty((xv.shape[0], w.shape[0]), dtype=object)
    scale = np.zeros((xv.shape[0], w.shape[0]))
    for r in range(xv.shape[0]):
        for j in range(w.shape[0]):
            terms = xv[r] * w[j]
            exp[r, j] = math.fsum(terms.tolist())
            scale[r, j] = float(np.abs(terms).sum())
    return exp, scale


def family_quant_round_x(fx):
    """matmul_quant with flags = WICK_QUANT_ROUND_X: the fixture's activation rows (f32) in, the
    product of their NumPy-rounded values and the dequantized weights expected."""
    xa = Operand("f32", fx["act.input"].reshape(-1, ROW))
    for name, (code, block, size) in TYPES.items():
        if name + ".dequant" not in fx:
            continue
        w = fx[name + ".dequant"].reshape(-1, ROW)
        exp, scale = exact_products(dequantize_act(ACT[name], fx[ACT[name] + ".act"]), w)
        add_case("matmul_quant", "%s/round-x-%s/f32" % (name, ACT[name]), "f32",
                 [xa, blocks_operand(fx[name + ".quant"], ROW // block * size)], [expected_json("f32", exp, scale)],
                 params={"type": code, "k": ROW, "flags": ROUND_X}, tol="matmul", k=ROW)


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
            exp, scale = exact_products(np.asarray(xs.values, dtype=np.float64), w)
            add_case("matmul_quant", cid, dt, [xs, blocks_operand(q, row_bytes)], [expected_json(dt, exp, scale)],
                     params=params, tol="matmul", k=ROW)
    family_quant_round_x(fx)
