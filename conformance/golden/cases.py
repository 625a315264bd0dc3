"""The case machinery of the golden data (generate.py): the op table read from wick_ops.h, the dtypes,
per-case seeds, dtype rounding, input values, operands (data and view: strides, offset) with their
JSON, expected outputs, and the registry every op family adds its cases and large recipes to."""
import base64
import math
import os
import re
import struct
import sys

import numpy as np

FORMAT = 1
BASE_SEED = 20240601

OP_TABLE_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk", "include", "wick",
                               "wick_ops.h")


def read_op_table(path=OP_TABLE_HEADER):
    """The op table, read from the SDK's list itself (wick_ops.h): {name: row} in code order, each row
    a dict of code, kind, inputs (min, max), outputs, params and dtypes (the class)."""
    row = re.compile(r"X\((\w+),\s*(\d+),\s*(\w+),\s*(\w+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\w+),\s*(\w+),\s*(\w+)\)")
    with open(path, encoding="utf-8") as f:
        rows = row.findall(f.read())
    if not rows:
        sys.exit("generate.py: no op rows in " + path)
    return {name: {"code": int(code), "kind": kind, "inputs": (int(lo), int(hi)), "outputs": int(outs),
                   "params": params, "dtypes": dtypes, "out": out}
            for _enum, code, name, kind, lo, hi, outs, params, dtypes, out in rows}


OP_TABLE = read_op_table()
OPS = {name: row["code"] for name, row in OP_TABLE.items()}

FLOATS = ["f32", "f64", "f16", "bf16"]
SINTS = ["i8", "i16", "i32", "i64"]
UINTS = ["u8", "u32", "u64"]
INTS = SINTS + UINTS
ALL = FLOATS + INTS + ["bool"]
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "i32": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64,
      "bool": np.uint8, "bf16": np.uint16}
BITS = {"i8": 8, "u8": 8, "i16": 16, "i32": 32, "i64": 64, "u32": 32, "u64": 64}


def is_float(dt):
    return dt in FLOATS


def is_signed(dt):
    return dt in SINTS


# ---- seeds -------------------------------------------------------------------------------------

def fnv1a64(text, basis):
    h = basis
    for b in text.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def case_seed(case_id, base=BASE_SEED):
    """seed = hash(base seed, case id); the C++ runner uses the same function (seed.hpp)."""
    return fnv1a64(case_id, 0xCBF29CE484222325 ^ base)


# ---- dtype rounding ----------------------------------------------------------------------------

def f32_to_bf16_bits(f):
    f = np.asarray(f, dtype=np.float32)
    bits = [int(b) for b in f.view(np.uint32).ravel()]
    out = []
    for b in bits:
        if (b & 0x7FFFFFFF) > 0x7F800000:
            out.append((b >> 16) | 0x40)
        else:
            out.append(((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF)
    return np.array(out, dtype=np.uint16).reshape(f.shape)


def bf16_bits_to_f64(b):
    b = np.asarray(b, dtype=np.uint32)
    return (b * np.uint32(65536)).astype(np.uint32).view(np.float32).astype(np.float64)


def wrap_int(v, dt):
    bits = BITS[dt]
    v = int(v) & ((1 << bits) - 1)
    if is_signed(dt) and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def to_dtype(values, dt):
    """(storage array whose bytes are the data, exact values: f64 array for floats, list of ints)."""
    if dt == "f64":
        a = np.asarray(values, dtype=np.float64)
        return a, a.copy()
    if dt in ("f32", "f16"):
        a = np.asarray(values, dtype=np.float64).astype(np.float32)
        if dt == "f16":
            a = a.astype(np.float16)
        return a, a.astype(np.float64)
    if dt == "bf16":
        bits = f32_to_bf16_bits(np.asarray(values, dtype=np.float64).astype(np.float32))
        return bits, bf16_bits_to_f64(bits)
    if dt == "bool":
        ints = [1 if v else 0 for v in np.asarray(values).ravel().tolist()]
        a = np.array(ints, dtype=np.uint8).reshape(np.shape(values))
        return a, np.array(ints, dtype=object).reshape(np.shape(values))
    ints = [wrap_int(v, dt) for v in np.asarray(values).ravel().tolist()]
    a = np.array(ints, dtype=object).reshape(np.shape(values)).astype(NP[dt]) if ints else \
        np.zeros(np.shape(values), dtype=NP[dt])
    return a, np.array(ints, dtype=object).reshape(np.shape(values))


def round_float(values, dt):
    """float64 values rounded to a float dtype (as f64): what an exact op must store."""
    return to_dtype(values, dt)[1]


# ---- values ------------------------------------------------------------------------------------

TINY = {"f32": 1e-40, "f64": 1e-310, "f16": 3e-6, "bf16": 1e-39}
ADVERSARIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0]


def rand_floats(rng, shape, lo, hi):
    return rng.uniform(lo, hi, size=shape)


def rand_ints(rng, shape, dt, lo=None, hi=None):
    if dt == "bool":
        return rng.integers(0, 2, size=shape)
    if lo is None:
        lo, hi = (-50, 50) if is_signed(dt) else (0, 100)
    return rng.integers(lo, hi + 1, size=shape)


def int_extremes(dt):
    bits = BITS[dt]
    if is_signed(dt):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return [lo, hi, -1, 0, 1, lo + 1, hi - 1, 7, -7]
    return [0, 1, (1 << bits) - 1, (1 << bits) - 2, 1 << (bits - 1), 7, 3, 2, 5]


# ---- operands ----------------------------------------------------------------------------------

def b64(array_bytes):
    return base64.b64encode(array_bytes).decode("ascii")


def c_strides(shape):
    s, acc = [], 1
    for d in reversed(shape):
        s.append(acc)
        acc *= d
    return list(reversed(s))


class Operand:
    """A logical array (exact values) and how it lies in its buffer (base, strides, offset)."""

    def __init__(self, dt, values, layout="contiguous", logical_shape=None):
        self.dt = dt
        storage, exact = to_dtype(values, dt)
        self.exact = exact  # of the source array (before broadcast)
        shape = list(np.shape(values))
        self.layout = layout
        if layout == "broadcast":
            # values has the small shape; logical_shape is the broadcast target (stride 0).
            target = list(logical_shape)
            lead = len(target) - len(shape)
            st = c_strides(shape)
            strides = [0] * len(target)
            for i, d in enumerate(shape):
                strides[lead + i] = st[i] if d == target[lead + i] else 0
            self.base = storage.ravel()
            self.shape, self.strides, self.offset = target, strides, 0
            self.values = np.broadcast_to(exact, target)
            return
        self.values = exact
        if layout == "transposed" and len(shape) >= 2:
            base = np.ascontiguousarray(np.swapaxes(storage, -1, -2))
            st = c_strides(list(base.shape))
            st[-1], st[-2] = st[-2], st[-1]
            self.base, self.shape, self.strides, self.offset = base.ravel(), shape, st, 0
        elif layout == "flipped" and len(shape) >= 1 and shape[0] > 0:
            base = np.ascontiguousarray(storage[::-1])
            st = c_strides(shape)
            self.offset = (shape[0] - 1) * st[0]
            st[0] = -st[0]
            self.base, self.shape, self.strides = base.ravel(), shape, st
        elif layout == "strided" and len(shape) >= 1:
            wide = list(shape)
            wide[-1] *= 2
            poison = np.zeros(wide, dtype=storage.dtype)
            poison[...] = storage.dtype.type(0x5A) if storage.dtype.kind in "iu" else np.nan
            poison[..., ::2] = storage
            st = c_strides(wide)
            st[-1] *= 2
            self.base, self.shape, self.strides, self.offset = poison.ravel(), shape, st, 0
        else:
            self.layout = "contiguous"
            self.base, self.shape, self.strides, self.offset = storage.ravel(), shape, c_strides(shape), 0

    def to_json(self):
        return {"dtype": self.dt, "shape": self.shape, "strides": self.strides, "offset": self.offset,
                "storage": int(self.base.size), "data": b64(self.base.astype(self.base.dtype.newbyteorder("<")).tobytes())}


def expected_json(dt, values, scale=None):
    flat = np.asarray(values, dtype=object).ravel().tolist()
    shape = list(np.shape(values))
    if is_float(dt):
        # A finite reference beyond the dtype's range is what rounding stores: +-Inf.
        flat = [float(v) for v in flat]
        rounded = round_float(np.array(flat, dtype=np.float64), dt).tolist() if flat else []
        flat = [r if (math.isinf(r) and math.isfinite(v)) else v for v, r in zip(flat, rounded)]
        data = struct.pack("<%dd" % len(flat), *flat)
    else:
        data = struct.pack("<%dq" % len(flat), *[wrap_int(int(v), "i64") for v in flat])
    out = {"dtype": dt, "shape": shape, "expected": b64(data)}
    if scale is not None:
        sflat = np.asarray(scale, dtype=np.float64).ravel().tolist()
        out["scale"] = b64(struct.pack("<%dd" % len(sflat), *sflat))
    return out


# ---- the registry ------------------------------------------------------------------------------

CASES = {op: [] for op in OPS}
LARGE = {op: [] for op in OPS}


def json_float(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def add_case(op, cid, dtype, inputs, outputs, params=None, tol="exact", k=1, check=None):
    full = op + "/" + cid
    c = {"id": full, "dtype": dtype, "tolerance": tol, "reduction": int(k)}
    if params is not None:
        c["params"] = {key: json_float(v) for key, v in params.items()}
    if check:
        c["check"] = check
    c["inputs"] = [i.to_json() for i in inputs]
    c["outputs"] = outputs
    CASES[op].append(c)


def add_large(op, cid, dtype, inputs, outputs, params=None, tol="exact", k=1, check=None):
    """inputs: [(dtype, shape, domain)], domain [lo, hi] floats/ints, "bool", or ["index", n]."""
    c = {"id": op + "/" + cid, "dtype": dtype, "tolerance": tol, "reduction": int(k)}
    if params is not None:
        c["params"] = {key: json_float(v) for key, v in params.items()}
    if check:
        c["check"] = check
    c["inputs"] = [{"dtype": d, "shape": list(s), "domain": dom} for d, s, dom in inputs]
    c["outputs"] = [{"dtype": d, "shape": list(s)} for d, s in outputs]
    LARGE[op].append(c)


def rng_for(op, cid):
    return np.random.default_rng(case_seed(op + "/" + cid))


def gen_values(rng, dt, shape, domain):
    if is_float(dt):
        return rand_floats(rng, shape, domain[0], domain[1])
    return rand_ints(rng, shape, dt, *(domain or (None, None)))
