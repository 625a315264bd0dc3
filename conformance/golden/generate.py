#!/usr/bin/env python3
"""Wick conformance golden data: the declarative case registry and its float64 NumPy references.

Every case names an op of the SDK (sdk/include/wick/wick_plugin.h), its params, its operands (dtype,
shape and view: contiguous, transposed, flipped = negative stride, strided, broadcast = stride 0,
0-d, empty), its input domain (including adversarial values: NaN, +-Inf, -0, denormals, ties) and
a tolerance class (conformance/tolerances.toml). Inputs come from a generator seeded with
seed = fnv1a64(case id, basis ^ BASE_SEED), so one case's data never depends on another's.
Expected outputs are computed in float64 (integers exactly, with Python ints) following
docs/ops.md, never by a Wick backend. Transcendental functions and the fused ops come from
crmath.py (mpmath, rounded once): NumPy's and libm's float64 results differ in the last bit from
one CPU to another, and the golden bytes must not.

Usage: generate.py [OUTPUT_DIR]   (default: the data/ directory beside this script)
The output is byte-identical on every run and every x86-64 CPU (ctest
conformance_golden_regenerates proves it, also with NumPy's SIMD dispatch turned down).
Also writes, for each op, "large" recipes (shapes and input domains, no data) that the
differential mode fills with seeded random values and compares against cpu-onednn.
"""
import base64
import json
import math
import os
import re
import struct
import sys

import numpy as np

import crmath

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


# ---- elementwise reference helpers ---------------------------------------------------------------

def vmap(fn, *arrays):
    """fn applied elementwise over broadcast object/float arrays; returns an object array."""
    b = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in arrays])
    out = np.empty(b[0].shape, dtype=object)
    for idx in np.ndindex(b[0].shape):
        out[idx] = fn(*[x[idx] for x in b])
    return out


def safe(fn):
    def wrapped(*args):
        try:
            return fn(*args)
        except (ValueError, ZeroDivisionError):
            return math.nan
        except OverflowError:
            return math.inf
    return wrapped


def erfinv(y):
    if math.isnan(y) or y < -1 or y > 1:
        return math.nan
    if y == 1:
        return math.inf
    if y == -1:
        return -math.inf
    if y == 0:
        return y
    return crmath.to_f64(crmath.mpmath.erfinv(crmath.mpf(y)))


sigmoid = crmath.sigmoid


def round_half_away(x):
    if math.isnan(x) or math.isinf(x):
        return x
    r = math.floor(abs(x) + 0.5)
    return math.copysign(r, x)


def round_half_even(x):
    if math.isnan(x) or math.isinf(x):
        return x
    return math.copysign(float(round(x)), x)


def fsign(x):
    if math.isnan(x):
        return math.nan
    return 0.0 if x == 0 else math.copysign(1.0, x)


UNARY_FLOAT = {
    # name: (function, domain (lo, hi), tolerance class, adversarial values allowed)
    "exp": (crmath.exp, (-5, 5), "math", True),
    "log": (crmath.log, (0.05, 8), "math", True),
    "sqrt": (crmath.sqrt, (0, 9), "arith", True),
    "rsqrt": (crmath.rsqrt, (0.05, 9), "math", True),
    "recip": (lambda v: 1 / v if v != 0 else math.copysign(math.inf, v), (0.2, 4), "arith", True),
    "sqr": (lambda x: x * x, (-4, 4), "arith", True),
    "tanh": (crmath.tanh, (-4, 4), "math", True),
    "erf": (crmath.erf, (-3, 3), "math", True),
    "sigmoid": (sigmoid, (-6, 6), "math", True),
    "sin": (crmath.sin, (-6, 6), "math", False),
    "cos": (crmath.cos, (-6, 6), "math", False),
    "tan": (crmath.tan, (-1.4, 1.4), "math", False),
    "asin": (crmath.asin, (-0.99, 0.99), "math", False),
    "acos": (crmath.acos, (-0.99, 0.99), "math", False),
    "atan": (crmath.atan, (-5, 5), "math", True),
    "sinh": (crmath.sinh, (-4, 4), "math", True),
    "cosh": (crmath.cosh, (-4, 4), "math", True),
    "asinh": (crmath.asinh, (-5, 5), "math", True),
    "acosh": (crmath.acosh, (1, 6), "math", False),
    "atanh": (crmath.atanh, (-0.95, 0.95), "math", False),
    "expm1": (crmath.expm1, (-3, 3), "math", True),
    "log1p": (crmath.log1p, (-0.9, 5), "math", False),
    "cbrt": (crmath.cbrt, (-8, 8), "math", True),
    "erfc": (crmath.erfc, (-3, 3), "math", True),
    "erfinv": (erfinv, (-0.98, 0.98), "math", False),
    "floor": (math.floor, (-5, 5), "exact", True),
    "ceil": (math.ceil, (-5, 5), "exact", True),
    "gelu_tanh": (crmath.gelu_tanh, (-4, 4), "math", False),
    "gelu_erf": (crmath.gelu_erf, (-4, 4), "math", False),
    "silu": (crmath.silu, (-6, 6), "math", False),
}


def unary_ref(name, x, params=None):
    if name in UNARY_FLOAT:
        fn = UNARY_FLOAT[name][0]
        if name in ("floor", "ceil"):
            return vmap(lambda v: v if (math.isnan(v) or math.isinf(v)) else float(fn(v)), x)
        return vmap(safe(lambda v: float(fn(v)) if not math.isnan(v) else math.nan), x)
    raise KeyError(name)


# ---- layouts -----------------------------------------------------------------------------------

UNARY_LAYOUTS = [("contiguous", [3, 7]), ("scalar", []), ("empty", [0, 4]), ("transposed", [4, 5]),
                 ("flipped", [9]), ("strided", [2, 6])]


def gen_values(rng, dt, shape, domain):
    if is_float(dt):
        return rand_floats(rng, shape, domain[0], domain[1])
    return rand_ints(rng, shape, dt, *(domain or (None, None)))


# ---- families ----------------------------------------------------------------------------------

def family_copy():
    for dt in ALL:
        for layout, shape in UNARY_LAYOUTS + [("broadcast", [4, 6])]:
            cid = "%s/%s" % (dt, layout)
            rng = rng_for("copy", cid)
            if layout == "broadcast":
                x = Operand(dt, gen_values(rng, dt, [6], (-9, 9) if is_float(dt) else None), "broadcast", shape)
            else:
                x = Operand(dt, gen_values(rng, dt, shape, (-9, 9) if is_float(dt) else None), layout)
            add_case("copy", cid, dt, [x], [expected_json(dt, x.values)])
        if is_float(dt):
            x = Operand(dt, np.array(ADVERSARIAL + [TINY[dt], -TINY[dt]]))
            add_case("copy", dt + "/adversarial", dt, [x], [expected_json(dt, x.values)])
        add_large("copy", dt + "/large", dt, [(dt, [257, 129], [-9, 9])], [(dt, [257, 129])])


def family_fill():
    for dt in ALL:
        if is_float(dt):
            values = [2.5, -1.25, math.nan, -math.inf]
        elif dt == "bool":
            values = [1, 0]
        else:
            values = [7, int_extremes(dt)[0], int_extremes(dt)[1]]
        for i, v in enumerate(values):
            for shape in ([3, 5], [], [0, 2]):
                cid = "%s/v%d/rank%d%s" % (dt, i, len(shape), "/empty" if 0 in shape else "")
                exp = np.full(shape, v if is_float(dt) else wrap_int(v, dt) if dt != "bool" else v, dtype=object)
                if is_float(dt):
                    exp = round_float(np.full(shape, v, dtype=np.float64), dt)
                p = {"float_value": float(v), "int_value": wrap_int(v, "i64") if not is_float(dt) else 0}
                if is_float(dt):
                    p["int_value"] = 0
                add_case("fill", cid, dt, [], [expected_json(dt, exp)], params=p)
        add_large("fill", dt + "/large", dt, [], [(dt, [513, 257])],
                  params={"float_value": 1.5 if is_float(dt) else 3.0, "int_value": 1 if dt == "bool" else 3})


def family_iota():
    for dt in FLOATS + ["i32", "i64", "u8", "i8", "i16", "u32", "u64"]:
        for axis, shape, start, step in ((1, [3, 5], 2, 3), (0, [4, 2], -3, 1), (-1, [2, 3, 4], 1, 2),
                                         (0, [0, 3], 0, 1)):
            if not is_signed(dt) and not is_float(dt) and start < 0:
                start = 5
            if is_float(dt):
                fstart, fstep = start + 0.5, step * 0.25
            else:
                fstart, fstep = 0.0, 0.0
            idx = np.zeros(shape, dtype=np.int64)
            if axis == -1:
                idx = np.arange(int(np.prod(shape))).reshape(shape)
            else:
                sh = [1] * len(shape)
                sh[axis] = shape[axis]
                idx = np.broadcast_to(np.arange(shape[axis]).reshape(sh), shape)
            if is_float(dt):
                exp = round_float(fstart + fstep * idx.astype(np.float64), dt)
            else:
                exp = vmap(lambda k: wrap_int(start + step * int(k), dt), idx)
            cid = "%s/axis%d/%s" % (dt, axis, "x".join(map(str, shape)))
            add_case("iota", cid, dt, [], [expected_json(dt, exp)],
                     params={"axis": axis, "float_start": fstart, "float_step": fstep,
                             "int_start": start, "int_step": step})
        add_large("iota", dt + "/large", dt, [], [(dt, [300, 200])],
                  params={"axis": -1, "float_start": 0.0, "float_step": 0.5 if is_float(dt) else 0.0,
                          "int_start": 0, "int_step": 1})


def cast_value(v, src, dst):
    """docs/ops.md Cast: one element, exact."""
    if dst == "bool":
        if is_float(src):
            return 1 if (math.isnan(v) or v != 0) else 0
        return 1 if v != 0 else 0
    if is_float(dst):
        if is_float(src):
            f = float(v)
            if dst == "f64":
                return f
            if src == "f64" and dst in ("f16", "bf16"):
                f = float(np.float32(f))  # through f32 (docs/ops.md)
            return float(round_float(np.array([f]), dst)[0])
        return float(round_float(np.array([float(int(v))]), dst)[0])
    # integer destination
    if is_float(src):
        if math.isnan(v):
            return 0
        bits = BITS[dst]
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed(dst) else (0, (1 << bits) - 1)
        if math.isinf(v):
            return hi if v > 0 else lo
        t = int(math.trunc(v))
        return max(lo, min(hi, t))
    return wrap_int(int(v), dst)


def family_cast():
    types = ["f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool", "i16", "u32", "u64"]
    for src in types:
        for dst in types:
            if src == dst:
                continue
            cid = "%s->%s" % (src, dst)
            rng = rng_for("cast", cid)
            if is_float(src):
                vals = list(rand_floats(rng, [10], -300, 300)) + [0.0, -0.0, 0.5, -0.75, 1e10, -1e10]
                if not (src == "f16"):
                    vals += [70000.5, -70000.25]
                vals += [math.nan, math.inf, -math.inf]
                if src == "f16":
                    vals = [v if abs(v) < 65000 or math.isinf(v) or math.isnan(v) else 1000.0 for v in vals]
            elif src == "bool":
                vals = [0, 1, 1, 0, 1]
            else:
                vals = int_extremes(src) + list(rand_ints(rng, [6], src))
            x = Operand(src, np.array(vals, dtype=object if not is_float(src) else np.float64))
            flat = np.asarray(x.values, dtype=object).ravel()
            exp = np.array([cast_value(float(v) if is_float(src) else int(v), src, dst) for v in flat],
                           dtype=object)
            add_case("cast", cid, cid, [x], [expected_json(dst, exp)])
            # a strided source
            vals2 = gen_values(rng, src, [3, 4], (-50, 50) if is_float(src) else None)
            x2 = Operand(src, vals2, "transposed")
            exp2 = vmap(lambda v: cast_value(float(v) if is_float(src) else int(v), src, dst), x2.values)
            add_case("cast", cid + "/transposed", cid, [x2], [expected_json(dst, exp2)])
            if src in ("f32", "i32", "f64") and dst in ("f32", "i32", "f16", "i64", "f64"):
                add_large("cast", cid + "/large", cid, [(src, [300, 301], [-1000, 1000])], [(dst, [300, 301])])


def philox(ctr, key):
    M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    c = list(ctr)
    k = list(key)
    for r in range(10):
        if r > 0:
            k[0] = (k[0] + W0) & 0xFFFFFFFF
            k[1] = (k[1] + W1) & 0xFFFFFFFF
        p0 = M0 * c[0]
        p1 = M1 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & 0xFFFFFFFF, p1 & 0xFFFFFFFF,
             ((p0 >> 32) ^ c[3] ^ k[1]) & 0xFFFFFFFF, p0 & 0xFFFFFFFF]
    return c


def philox_element(seed, offset, index):
    n = (offset + index) & ((1 << 128) - 1)
    return philox([n & 0xFFFFFFFF, (n >> 32) & 0xFFFFFFFF, (n >> 64) & 0xFFFFFFFF, (n >> 96) & 0xFFFFFFFF],
                  [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF])


def family_rng():
    for op in ("rng_uniform", "rng_normal"):
        for dt in FLOATS:
            for seed, offset, a, b, shape in ((42, 0, 0.0, 1.0, [4, 8]), (0xDEADBEEF12345, 1000, -2.0, 3.0, [37]),
                                              (7, (1 << 64) - 5, 1.0, 0.5, [3, 3])):
                vals = []
                for i in range(int(np.prod(shape))):
                    w = philox_element(seed, offset, i)
                    if op == "rng_uniform":
                        if dt == "f64":
                            u = ((w[0] << 21) | (w[1] >> 11)) * 2.0 ** -53
                        else:
                            u = (w[0] >> 8) * 2.0 ** -24
                        vals.append(a + (b - a) * u)
                    else:
                        u1 = (w[0] + 1) * 2.0 ** -32
                        u2 = w[1] * 2.0 ** -32
                        vals.append(crmath.box_muller(a, b, u1, u2))
                exp = np.array(vals, dtype=np.float64).reshape(shape)
                cid = "%s/seed%d/%s" % (dt, seed % 1000, "x".join(map(str, shape)))
                add_case(op, cid, dt, [], [expected_json(dt, exp)],
                         params={"seed": seed, "offset": offset, "a": a, "b": b},
                         tol="arith" if op == "rng_uniform" else "math")
            add_large(op, dt + "/large", dt, [], [(dt, [512, 300])],
                      params={"seed": 99, "offset": 5, "a": 0.0, "b": 1.0},
                      tol="arith" if op == "rng_uniform" else "math")


SCALE_BY_INPUT = ("gelu_tanh", "gelu_erf", "silu", "elu")


def input_scale(name, x):
    """x f(x)-shaped activations lose relative accuracy where f(x) is tiny: measure against |x|."""
    if name not in SCALE_BY_INPUT:
        return None
    return np.abs(np.asarray(x, dtype=np.float64))


def unary_float_family(name, fn_ref, dtypes, domain, tol, adversarial, params=None, out_dt=None):
    for dt in dtypes:
        odt = out_dt or dt
        for layout, shape in UNARY_LAYOUTS:
            cid = "%s/%s" % (dt, layout)
            rng = rng_for(name, cid)
            x = Operand(dt, gen_values(rng, dt, shape, domain), layout)
            exp = fn_ref(x.values)
            if tol == "exact" and is_float(odt):
                exp = round_float(np.asarray(exp, dtype=np.float64), odt)
            add_case(name, cid, dt, [x], [expected_json(odt, exp, input_scale(name, x.values))], params=params, tol=tol)
        if adversarial and is_float(dt):
            vals = [v for v in ADVERSARIAL + [TINY[dt], -TINY[dt]]]
            x = Operand(dt, np.array(vals))
            exp = fn_ref(x.values)
            if tol == "exact" and is_float(odt):
                exp = round_float(np.asarray(exp, dtype=np.float64), odt)
            add_case(name, dt + "/adversarial", dt, [x], [expected_json(odt, exp)], params=params, tol=tol)
        add_large(name, dt + "/large", dt, [(dt, [300, 257], list(domain) if domain else None)],
                  [(odt, [300, 257])], params=params, tol=tol)


def family_unary():
    for name, (fn, dom, tol, adv) in UNARY_FLOAT.items():
        unary_float_family(name, lambda x, n=name: unary_ref(n, x), FLOATS, dom, tol, adv)

    # Sign-aware ops on floats and integers.
    def int_or_float(name, ffn, ifn, dtypes, tol_f="exact"):
        for dt in dtypes:
            if is_float(dt):
                unary_float_family(name, lambda x: vmap(ffn, x), [dt], (-5, 5), tol_f, True)
            else:
                for layout, shape in UNARY_LAYOUTS[:4]:
                    cid = "%s/%s" % (dt, layout)
                    rng = rng_for(name, cid)
                    x = Operand(dt, gen_values(rng, dt, shape, None), layout)
                    add_case(name, cid, dt, [x], [expected_json(dt, vmap(lambda v: wrap_int(ifn(int(v)), dt), x.values))])
                x = Operand(dt, np.array(int_extremes(dt), dtype=object))
                add_case(name, dt + "/extremes", dt, [x],
                         [expected_json(dt, vmap(lambda v: wrap_int(ifn(int(v)), dt), x.values))])
                add_large(name, dt + "/large", dt, [(dt, [300, 257], None)], [(dt, [300, 257])])

    int_or_float("neg", lambda v: -v, lambda v: -v, FLOATS + SINTS + ["u8", "u32"])
    int_or_float("abs", lambda v: abs(v), lambda v: abs(v), FLOATS + SINTS)
    int_or_float("sign", fsign, lambda v: (v > 0) - (v < 0), FLOATS + SINTS)
    int_or_float("relu", lambda v: v if (math.isnan(v) or v > 0) else 0.0, lambda v: max(v, 0), FLOATS + ["i32", "i64"])
    int_or_float("sqr", lambda v: v * v, lambda v: v * v, ["i32", "i64"])

    # round: two modes, ties in the input.
    for mode, fn in ((0, round_half_away), (1, round_half_even)):
        for dt in FLOATS:
            for layout, shape in UNARY_LAYOUTS[:2]:
                cid = "%s/mode%d/%s" % (dt, mode, layout)
                rng = rng_for("round", cid)
                vals = np.round(gen_values(rng, dt, shape, (-6, 6)) * 2) / 2  # many exact ties
                x = Operand(dt, vals, layout)
                add_case("round", cid, dt, [x], [expected_json(dt, round_float(np.asarray(vmap(fn, x.values), dtype=np.float64), dt))],
                         params={"alpha": 0.0, "beta": 0.0, "mode": mode})
            x = Operand(dt, np.array(ADVERSARIAL + [3.5, -3.5, 4.5, 0.49999997]))
            add_case("round", "%s/mode%d/adversarial" % (dt, mode), dt, [x],
                     [expected_json(dt, round_float(np.asarray(vmap(fn, x.values), dtype=np.float64), dt))],
                     params={"alpha": 0.0, "beta": 0.0, "mode": mode})
            add_large("round", "%s/mode%d/large" % (dt, mode), dt, [(dt, [300, 257], [-50, 50])], [(dt, [300, 257])],
                      params={"alpha": 0.0, "beta": 0.0, "mode": mode})

    for alpha in (1.0, 0.3):
        unary_float_family("elu", lambda x, a=alpha: vmap(lambda v: crmath.elu(v, a), x),
                           FLOATS, (-4, 4), "math", False, params={"alpha": alpha, "beta": 0.0, "mode": 0})
    for alpha, beta in ((2.0, 0.5), (-0.25, 3.0)):
        unary_float_family("affine", lambda x, a=alpha, b=beta: vmap(lambda v: v * a + b, x), FLOATS, (-5, 5),
                           "arith", True, params={"alpha": alpha, "beta": beta, "mode": 0})
    for alpha, dom in ((2.5, (0.1, 4)), (-1.5, (0.2, 4)), (3.0, (-3, 3))):
        unary_float_family("powf", lambda x, a=alpha: vmap(lambda v: crmath.pow(v, a), x), FLOATS, dom,
                           "math", False, params={"alpha": alpha, "beta": 0.0, "mode": 0})

    unary_float_family("is_nan", lambda x: vmap(lambda v: 1 if math.isnan(v) else 0, x), FLOATS, (-5, 5),
                       "exact", True, out_dt="bool")
    unary_float_family("is_inf", lambda x: vmap(lambda v: 1 if math.isinf(v) else 0, x), FLOATS, (-5, 5),
                       "exact", True, out_dt="bool")

    # Integer and bool bit ops.
    for name, fn, dtypes in (
            ("logical_not", lambda v, dt: 1 - v, ["bool"]),
            ("bitwise_not", lambda v, dt: (1 - v) if dt == "bool" else wrap_int(~v, dt), INTS + ["bool"]),
            ("popcount", lambda v, dt: bin(v & ((1 << BITS[dt]) - 1)).count("1"), INTS),
            ("clz", lambda v, dt: BITS[dt] - (v & ((1 << BITS[dt]) - 1)).bit_length(), INTS)):
        for dt in dtypes:
            for layout, shape in UNARY_LAYOUTS[:4]:
                cid = "%s/%s" % (dt, layout)
                rng = rng_for(name, cid)
                x = Operand(dt, gen_values(rng, dt, shape, None), layout)
                add_case(name, cid, dt, [x], [expected_json(dt, vmap(lambda v: fn(int(v), dt), x.values))])
            if dt != "bool":
                x = Operand(dt, np.array(int_extremes(dt), dtype=object))
                add_case(name, dt + "/extremes", dt, [x], [expected_json(dt, vmap(lambda v: fn(int(v), dt), x.values))])
            add_large(name, dt + "/large", dt, [(dt, [300, 257], None)], [(dt, [300, 257])])


# ---- binary ------------------------------------------------------------------------------------

def int_div(a, b, dt):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return wrap_int(q if (a >= 0) == (b >= 0) else -q, dt)


def int_rem(a, b, dt):
    if b == 0:
        return 0
    r = abs(a) % abs(b)
    return wrap_int(r if a >= 0 else -r, dt)


def shift(a, b, dt, left):
    bits = BITS[dt]
    if b < 0 or b >= bits:
        return -1 if (not left and is_signed(dt) and a < 0) else 0
    if left:
        return wrap_int(a << b, dt)
    if is_signed(dt):
        return wrap_int(a >> b, dt)
    return wrap_int((a & ((1 << bits) - 1)) >> b, dt)


def fmax(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


def fmin(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return min(a, b)


def fdiv(a, b):
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


fpow = crmath.pow


def fhypot(a, b):
    """sqrt(a^2 + b^2) without overflow, rounded once; C99 specials (an infinity wins over NaN)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.hypot(a, b)
    return crmath.to_f64(crmath.mpmath.hypot(crmath.mpf(a), crmath.mpf(b)))


def fmod(a, b):
    return float(np.fmod(np.float64(a), np.float64(b)))


def ipow(a, b, dt):
    if b < 0:
        return 0 if abs(a) != 1 else (a if b % 2 else 1)
    return wrap_int(pow(a, b, 1 << BITS[dt]), dt)


BINARY = {
    # name: (float fn, int fn or None, tolerance for floats, float domain a, float domain b)
    "add": (lambda a, b: a + b, lambda a, b, dt: wrap_int(a + b, dt), "arith", (-9, 9), (-9, 9)),
    "sub": (lambda a, b: a - b, lambda a, b, dt: wrap_int(a - b, dt), "arith", (-9, 9), (-9, 9)),
    "mul": (lambda a, b: a * b, lambda a, b, dt: wrap_int(a * b, dt), "arith", (-9, 9), (-9, 9)),
    "div": (fdiv, int_div, "arith", (-9, 9), (0.5, 4)),
    "maximum": (fmax, lambda a, b, dt: max(a, b), "exact", (-9, 9), (-9, 9)),
    "minimum": (fmin, lambda a, b, dt: min(a, b), "exact", (-9, 9), (-9, 9)),
    "pow": (fpow, ipow, "math", (0.1, 3), (-2, 2)),
    "rem": (fmod, int_rem, "arith", (-9, 9), (0.5, 4)),
    "atan2": (crmath.atan2, None, "math", (-9, 9), (-9, 9)),
    "hypot": (fhypot, None, "math", (-9, 9), (-9, 9)),
}
COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
BITWISE = {
    "bitwise_and": lambda a, b, dt: a & b if dt == "bool" else wrap_int(a & b, dt),
    "bitwise_or": lambda a, b, dt: a | b if dt == "bool" else wrap_int(a | b, dt),
    "bitwise_xor": lambda a, b, dt: a ^ b if dt == "bool" else wrap_int(a ^ b, dt),
    "shl": lambda a, b, dt: shift(a, b, dt, True),
    "shr": lambda a, b, dt: shift(a, b, dt, False),
}

BINARY_LAYOUTS = [("contiguous", [3, 7], [3, 7]), ("broadcast_row", [4, 5], [5]), ("broadcast_scalar", [6], []),
                  ("scalar", [], []), ("empty", [0, 3], [0, 3]), ("transposed", [4, 3], [4, 3]),
                  ("flipped", [8], [8]), ("strided", [2, 5], [2, 5])]


def binary_operands(rng, dt, layout, shape, bshape, dom_a, dom_b, gen=None):
    gen = gen or (lambda d, s, dom: gen_values(rng, d, s, dom))
    a_vals = gen(dt, shape, dom_a)
    if layout.startswith("broadcast"):
        a = Operand(dt, a_vals)
        b = Operand(dt, gen(dt, bshape, dom_b), "broadcast", shape)
    else:
        lay = layout if layout in ("transposed", "flipped", "strided") else "contiguous"
        a = Operand(dt, a_vals, lay)
        b = Operand(dt, gen(dt, bshape, dom_b), "transposed" if lay == "transposed" else "contiguous")
    return a, b


def binary_family(name, ffn, ifn, tol, dom_a, dom_b, dtypes, out_dt=None, int_domain=None, adversarial=True):
    for dt in dtypes:
        odt = out_dt or dt
        for layout, shape, bshape in BINARY_LAYOUTS:
            cid = "%s/%s" % (dt, layout)
            rng = rng_for(name, cid)
            if is_float(dt):
                a, b = binary_operands(rng, dt, layout, shape, bshape, dom_a, dom_b)
                exp = vmap(lambda x, y: ffn(float(x), float(y)), a.values, b.values)
                if tol == "exact" and is_float(odt):
                    exp = round_float(np.asarray(exp, dtype=np.float64), odt)
            else:
                gen = lambda d, s, dom: rand_ints(rng, s, d, *(int_domain(d) if int_domain else (None, None)))
                a, b = binary_operands(rng, dt, layout, shape, bshape, None, None, gen)
                exp = vmap(lambda x, y: ifn(int(x), int(y), dt), a.values, b.values)
            add_case(name, cid, dt, [a, b], [expected_json(odt, exp)], tol=tol if is_float(dt) else "exact")
        if adversarial and is_float(dt):
            vals = ADVERSARIAL + [TINY[dt], 3.0]
            av = np.array([x for x in vals for _ in vals])
            bv = np.array([y for _ in vals for y in vals])
            a, b = Operand(dt, av), Operand(dt, bv)
            exp = vmap(lambda x, y: ffn(float(x), float(y)), a.values, b.values)
            if tol == "exact" and is_float(odt):
                exp = round_float(np.asarray(exp, dtype=np.float64), odt)
            add_case(name, dt + "/adversarial", dt, [a, b], [expected_json(odt, exp)], tol=tol)
        elif not is_float(dt) and dt != "bool" and ifn is not None:
            ex = int_extremes(dt)
            av = np.array([x for x in ex for _ in ex], dtype=object)
            bv = np.array([y for _ in ex for y in ex], dtype=object)
            a, b = Operand(dt, av), Operand(dt, bv)
            exp = vmap(lambda x, y: ifn(int(x), int(y), dt), a.values, b.values)
            add_case(name, dt + "/extremes", dt, [a, b], [expected_json(odt, exp)])
        dom = list(dom_a) if is_float(dt) else None
        add_large(name, dt + "/large", dt, [(dt, [300, 257], dom), (dt, [300, 257], list(dom_b) if is_float(dt) else None)],
                  [(odt, [300, 257])], tol=tol if is_float(dt) else "exact")


def family_binary():
    for name, (ffn, ifn, tol, da, db) in BINARY.items():
        dtypes = FLOATS + (INTS if ifn is not None else [])
        int_domain = None
        if name == "pow":
            dtypes = FLOATS + ["i32", "i64"]
            int_domain = lambda d: (-3, 5)
        binary_family(name, ffn, ifn, tol, da, db, dtypes, int_domain=int_domain)
    for name, fn in COMPARE.items():
        binary_family(name, lambda a, b, f=fn: 1 if f(a, b) else 0, lambda a, b, dt, f=fn: 1 if f(a, b) else 0,
                      "exact", (-3, 3), (-3, 3), FLOATS + INTS + ["bool"], out_dt="bool",
                      int_domain=lambda d: (0, 1) if d == "bool" else (-3, 3) if is_signed(d) else (0, 5))
    for name, fn in BITWISE.items():
        dtypes = INTS + (["bool"] if name.startswith("bitwise") else [])
        dom = (lambda d: (0, 1) if d == "bool" else (-2, BITS[d] + 1) if name in ("shl", "shr") else (None, None))
        binary_family(name, None, fn, "exact", None, None, dtypes, int_domain=dom)


def family_where():
    for dt in ALL:
        for layout, shape in (("contiguous", [3, 7]), ("broadcast", [4, 5]), ("scalar", []), ("empty", [0, 2]),
                              ("transposed", [3, 4])):
            cid = "%s/%s" % (dt, layout)
            rng = rng_for("where", cid)
            cv = rand_ints(rng, shape, "bool")
            if layout == "broadcast":
                c = Operand("bool", cv)
                a = Operand(dt, gen_values(rng, dt, [5], (-5, 5)), "broadcast", shape)
                b = Operand(dt, gen_values(rng, dt, [4, 1], (-5, 5)), "broadcast", shape)
            else:
                lay = "transposed" if layout == "transposed" else "contiguous"
                c = Operand("bool", cv, lay)
                a = Operand(dt, gen_values(rng, dt, shape, (-5, 5)), lay)
                b = Operand(dt, gen_values(rng, dt, shape, (-5, 5)))
            exp = vmap(lambda cc, x, y: x if cc else y, c.values, a.values, b.values)
            add_case("where", cid, dt, [c, a, b], [expected_json(dt, exp)])
        add_large("where", dt + "/large", dt, [("bool", [300, 257], "bool"), (dt, [300, 257], [-5, 5]),
                                              (dt, [300, 257], [-5, 5])], [(dt, [300, 257])])


# ---- reductions --------------------------------------------------------------------------------

def reduce_ref(name, x, axes, dt):
    arr = np.asarray(x, dtype=object)
    keep = [1 if i in axes else d for i, d in enumerate(arr.shape)]
    out = np.empty(keep, dtype=object)
    scale = np.zeros(keep, dtype=np.float64)
    for idx in np.ndindex(*keep):
        sl = tuple(slice(None) if i in axes else slice(idx[i], idx[i] + 1) for i in range(arr.ndim))
        vals = list(np.asarray(arr[sl], dtype=object).ravel())
        if is_float(dt):
            vals = [float(v) for v in vals]
            if name == "reduce_sum":
                r = math.fsum(vals) if not any(math.isnan(v) or math.isinf(v) for v in vals) else sum(vals)
                s = sum(abs(v) for v in vals)
            elif name == "reduce_prod":
                r = float(np.prod(np.array(vals, dtype=np.float64))) if vals else 1.0
                s = abs(r)
            elif name == "reduce_max":
                r = -math.inf if not vals else (math.nan if any(math.isnan(v) for v in vals) else max(vals))
                s = 0.0
            else:
                r = math.inf if not vals else (math.nan if any(math.isnan(v) for v in vals) else min(vals))
                s = 0.0
            out[idx], scale[idx] = r, s
        else:
            vals = [int(v) for v in vals]
            if name == "reduce_sum":
                r = sum(vals)
            elif name == "reduce_prod":
                r = 1
                for v in vals:
                    r *= v
            elif name == "reduce_max":
                r = max(vals)
            else:
                r = min(vals)
            out[idx] = wrap_int(r, dt) if dt != "bool" else r
    return out, scale


def family_reduce():
    configs = [("axis1", [3, 5], [1]), ("axis0", [4, 3], [0]), ("axes02", [2, 3, 4], [0, 2]),
               ("all", [3, 4], [0, 1]), ("long", [2, 300], [1]), ("transposed", [5, 4], [0]),
               ("flipped", [6, 2], [0]), ("noaxes", [3, 2], []), ("rank0", [], [])]
    for name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
        dtypes = FLOATS + ["i32", "i64", "u8", "i8", "u32", "u64", "i16"]
        for dt in dtypes:
            for cid_s, shape, axes in configs:
                cid = "%s/%s" % (dt, cid_s)
                rng = rng_for(name, cid)
                lay = cid_s if cid_s in ("transposed", "flipped") else "contiguous"
                dom = (0.5, 1.5) if name == "reduce_prod" else (-3, 3)
                if is_float(dt):
                    vals = gen_values(rng, dt, shape, dom)
                else:
                    vals = rand_ints(rng, shape, dt, *((-3, 3) if is_signed(dt) else (0, 6)))
                if name == "reduce_prod" and cid_s == "long":
                    vals = np.where(np.arange(int(np.prod(shape))).reshape(shape) % 50 == 0, vals, 1) if not is_float(dt) else \
                        1 + (vals - 1) * 0.01
                x = Operand(dt, vals, lay)
                exp, scale = reduce_ref(name, x.values, axes, dt)
                k = max(1, int(np.prod([shape[a] for a in axes])) if axes else 1)
                tol = "reduce" if is_float(dt) and name in ("reduce_sum", "reduce_prod") else "exact"
                add_case(name, cid, dt, [x], [expected_json(dt, exp, scale if tol == "reduce" and name == "reduce_sum" else None)],
                         params={"axes": axes}, tol=tol, k=k)
            if is_float(dt):
                x = Operand(dt, np.array([[1.0, math.nan, 2.0], [math.inf, 1.0, -1.0], [-0.0, 0.0, TINY[dt]]]))
                exp, scale = reduce_ref(name, x.values, [1], dt)
                add_case(name, dt + "/adversarial", dt, [x], [expected_json(dt, exp, scale if name == "reduce_sum" else None)],
                         params={"axes": [1]}, tol="reduce" if name in ("reduce_sum", "reduce_prod") else "exact", k=3)
            if dt in ("f32", "f64", "i32", "i64"):
                add_large(name, dt + "/large", dt, [(dt, [257, 1000], [0.99, 1.01] if name == "reduce_prod" else [-3, 3] if is_float(dt) else [-3, 3])],
                          [(dt, [257, 1])], params={"axes": [1]},
                          tol="reduce" if is_float(dt) and name in ("reduce_sum", "reduce_prod") else "exact", k=1000)


def family_arg():
    for name in ("argmax", "argmin"):
        for dt in FLOATS + ["i32", "i64", "u8", "i8"]:
            for odt in ("i64", "i32"):
                for last in (0, 1):
                    for cid_s, shape, axis, lay in (("axis1", [3, 6], 1, "contiguous"), ("axis0", [5, 3], 0, "contiguous"),
                                                    ("transposed", [4, 5], 1, "transposed"), ("rank3", [2, 3, 4], 1, "contiguous")):
                        cid = "%s->%s/last%d/%s" % (dt, odt, last, cid_s)
                        rng = rng_for(name, cid)
                        vals = rand_ints(rng, shape, "i32", -3, 3)  # ties on purpose
                        x = Operand(dt, vals.astype(np.float64) if is_float(dt) else vals, lay)
                        exp = arg_ref(name, x.values, axis, last)
                        add_case(name, cid, dt + "->" + odt, [x], [expected_json(odt, exp)],
                                 params={"axis": axis, "flag": last})
                    if is_float(dt):
                        x = Operand(dt, np.array([[1.0, math.nan, 3.0, math.nan], [-math.inf, -math.inf, 0.0, -0.0],
                                                  [math.inf, 2.0, math.inf, 1.0]]))
                        exp = arg_ref(name, x.values, 1, last)
                        add_case(name, "%s->%s/last%d/adversarial" % (dt, odt, last), dt + "->" + odt, [x],
                                 [expected_json(odt, exp)], params={"axis": 1, "flag": last})
            add_large(name, dt + "->i64/large", dt + "->i64", [(dt, [300, 500], [-100, 100])], [("i64", [300, 1])],
                      params={"axis": 1, "flag": 0})


def arg_ref(name, x, axis, last):
    arr = np.asarray(x, dtype=object)
    keep = list(arr.shape)
    keep[axis] = 1
    out = np.empty(keep, dtype=object)
    for idx in np.ndindex(*keep):
        sl = list(idx)
        sl[axis] = slice(None)
        vals = [float(v) for v in arr[tuple(sl)]]
        nans = [i for i, v in enumerate(vals) if math.isnan(v)]
        if nans:
            out[idx] = nans[0]  # docs/ops.md: the first NaN's index (NumPy), whatever the tie rule
            continue
        best = max(vals) if name == "argmax" else min(vals)
        hits = [i for i, v in enumerate(vals) if v == best]
        out[idx] = hits[-1] if last else hits[0]
    return out


def family_cum():
    for name in ("cumsum", "cumprod", "cummax", "cummin"):
        for dt in FLOATS + ["i32", "i64", "u8"]:
            flags = (0, 1, 2, 3) if name in ("cumsum", "cumprod") else (0, 1)
            for flag in flags:
                for cid_s, shape, axis, lay in (("axis1", [3, 6], 1, "contiguous"), ("axis0", [5, 3], 0, "contiguous"),
                                                ("transposed", [4, 5], 1, "transposed"), ("empty", [0, 4], 1, "contiguous")):
                    cid = "%s/flag%d/%s" % (dt, flag, cid_s)
                    rng = rng_for(name, cid)
                    if is_float(dt):
                        vals = gen_values(rng, dt, shape, (0.5, 1.5) if name == "cumprod" else (-3, 3))
                    else:
                        vals = rand_ints(rng, shape, dt, *((-3, 3) if is_signed(dt) else (0, 4)))
                    x = Operand(dt, vals, lay)
                    exp, scale = cum_ref(name, x.values, axis, flag, dt)
                    tol = "reduce" if is_float(dt) and name in ("cumsum", "cumprod") else "exact"
                    add_case(name, cid, dt, [x], [expected_json(dt, exp, scale if name == "cumsum" and tol == "reduce" else None)],
                             params={"axis": axis, "flag": flag}, tol=tol, k=shape[axis])
            if dt in ("f32", "i32", "i64", "f64"):
                add_large(name, dt + "/large", dt, [(dt, [200, 500], [0.999, 1.001] if name == "cumprod" else [-3, 3])],
                          [(dt, [200, 500])], params={"axis": 1, "flag": 0},
                          tol="reduce" if is_float(dt) and name in ("cumsum", "cumprod") else "exact", k=500)


def cum_ref(name, x, axis, flag, dt):
    arr = np.asarray(x, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    scale = np.zeros(arr.shape, dtype=np.float64)
    reverse, exclusive = flag & 1, flag & 2
    for idx in np.ndindex(*[1 if i == axis else d for i, d in enumerate(arr.shape)]):
        n = arr.shape[axis]
        order = list(range(n))[::-1] if reverse else list(range(n))
        acc = None
        mag = 0.0
        for j in order:
            pos = list(idx)
            pos[axis] = j
            pos = tuple(pos)
            v = arr[pos]
            v = float(v) if is_float(dt) else int(v)
            if exclusive:
                ident = 0 if name == "cumsum" else 1
                out[pos] = acc if acc is not None else (float(ident) if is_float(dt) else ident)
                scale[pos] = mag
            if acc is None:
                acc = v
            elif name == "cumsum":
                acc = acc + v
            elif name == "cumprod":
                acc = acc * v
            elif name == "cummax":
                acc = fmax(acc, v) if is_float(dt) else max(acc, v)
            else:
                acc = fmin(acc, v) if is_float(dt) else min(acc, v)
            mag += abs(v) if name == "cumsum" else 0.0
            if not is_float(dt):
                acc = wrap_int(acc, dt)
            if not exclusive:
                out[pos] = acc
                scale[pos] = mag if name == "cumsum" else abs(acc) if is_float(dt) else 0
    return out, scale


# ---- matmul, conv, windows ---------------------------------------------------------------------

def matmul_ref(a, b):
    a = np.asarray(a, dtype=object)
    b = np.asarray(b, dtype=object)
    batch = a.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    out = np.empty(batch + (m, n), dtype=object)
    scale = np.zeros(batch + (m, n), dtype=np.float64)
    for bi in np.ndindex(*batch):
        for i in range(m):
            for j in range(n):
                terms = [a[bi + (i, p)] * b[bi + (p, j)] for p in range(k)]
                if terms and isinstance(terms[0], float):
                    out[bi + (i, j)] = math.fsum(terms)
                    scale[bi + (i, j)] = sum(abs(t) for t in terms)
                else:
                    out[bi + (i, j)] = sum(terms) if terms else 0
    return out, scale


def family_matmul():
    configs = [("2d", [3, 4], [4, 5], "contiguous", "contiguous"), ("transposed_b", [3, 6], [6, 4], "contiguous", "transposed"),
               ("transposed_a", [5, 3], [3, 2], "transposed", "contiguous"), ("batched", [2, 3, 4], [2, 4, 3], "contiguous", "contiguous"),
               ("vector", [1, 7], [7, 1], "contiguous", "contiguous"), ("k0", [2, 0], [0, 3], "contiguous", "contiguous"),
               ("m0", [0, 3], [3, 2], "contiguous", "contiguous"), ("long_k", [2, 130], [130, 3], "contiguous", "contiguous")]
    for dt in FLOATS + ["i32", "i64"]:
        for cid_s, sa, sb, la, lb in configs:
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("matmul", cid)
            a = Operand(dt, gen_values(rng, dt, sa, (-2, 2) if is_float(dt) else (-5, 5)), la)
            b = Operand(dt, gen_values(rng, dt, sb, (-2, 2) if is_float(dt) else (-5, 5)), lb)
            exp, scale = matmul_ref(a.values, b.values)
            if not is_float(dt):
                exp = vmap(lambda v: wrap_int(v, dt), exp)
            tol = "matmul" if is_float(dt) else "exact"
            add_case("matmul", cid, dt, [a, b], [expected_json(dt, exp, scale if is_float(dt) else None)], tol=tol, k=sa[-1])
        # batch broadcast: b's batch axis has stride 0
        cid = dt + "/broadcast_batch"
        rng = rng_for("matmul", cid)
        a = Operand(dt, gen_values(rng, dt, [3, 2, 4], (-2, 2) if is_float(dt) else (-5, 5)))
        b = Operand(dt, gen_values(rng, dt, [4, 5], (-2, 2) if is_float(dt) else (-5, 5)), "broadcast", [3, 4, 5])
        exp, scale = matmul_ref(a.values, b.values)
        add_case("matmul", cid, dt, [a, b], [expected_json(dt, exp, scale if is_float(dt) else None)],
                 tol="matmul" if is_float(dt) else "exact", k=4)
        add_large("matmul", dt + "/large", dt, [(dt, [256, 300], [-1, 1]), (dt, [300, 200], [-1, 1])],
                  [(dt, [256, 200])], tol="matmul" if is_float(dt) else "exact", k=300)


def conv_out(n, k, s, lo, hi, d, idil):
    n_eff = (n - 1) * idil + 1 if n > 0 else 0
    return (n_eff + lo + hi - ((k - 1) * d + 1)) // s + 1


def conv_ref(x, w, strides, lo, hi, dil, idil, groups):
    x = np.asarray(x, dtype=object)
    w = np.asarray(w, dtype=object)
    N, C = x.shape[:2]
    O = w.shape[0]
    sp = x.shape[2:]
    ks = w.shape[2:]
    r = len(sp)
    osp = [conv_out(sp[i], ks[i], strides[i], lo[i], hi[i], dil[i], idil[i]) for i in range(r)]
    out = np.empty([N, O] + osp, dtype=object)
    scale = np.zeros([N, O] + osp, dtype=np.float64)
    cg = C // groups
    og = O // groups
    for n in range(N):
        for o in range(O):
            g = o // og
            for opos in np.ndindex(*osp):
                terms = []
                for c in range(cg):
                    for kpos in np.ndindex(*ks):
                        ipos = []
                        ok = True
                        for i in range(r):
                            p = opos[i] * strides[i] + kpos[i] * dil[i] - lo[i]
                            if p < 0 or p % idil[i] != 0 or p // idil[i] >= sp[i]:
                                ok = False
                                break
                            ipos.append(p // idil[i])
                        if ok:
                            terms.append(float(x[(n, g * cg + c) + tuple(ipos)]) * float(w[(o, c) + kpos]))
                out[(n, o) + opos] = math.fsum(terms)
                scale[(n, o) + opos] = sum(abs(t) for t in terms)
    return out, scale


def family_conv():
    configs = [
        ("1d", [2, 3, 9], [4, 3, 3], [1], [0], [0], [1], [1], 1),
        ("1d_stride_pad", [1, 2, 10], [3, 2, 4], [2], [1], [2], [1], [1], 1),
        ("2d", [1, 2, 5, 6], [3, 2, 3, 3], [1, 1], [0, 0], [0, 0], [1, 1], [1, 1], 1),
        ("2d_pad_stride_dil", [2, 2, 7, 6], [2, 2, 3, 2], [2, 1], [1, 0], [2, 1], [2, 1], [1, 1], 1),
        ("2d_groups", [1, 4, 5, 5], [6, 2, 3, 3], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 2),
        ("2d_depthwise", [1, 3, 4, 4], [3, 1, 2, 2], [1, 1], [0, 0], [0, 0], [1, 1], [1, 1], 3),
        ("1d_transposed", [1, 2, 5], [2, 2, 3], [1], [2], [2], [1], [2], 1),
        ("3d", [1, 1, 3, 4, 4], [2, 1, 2, 2, 2], [1, 1, 1], [0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1], 1),
    ]
    for dt in FLOATS:
        for cid_s, xs, ws, st, lo, hi, dil, idil, groups in configs:
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("conv", cid)
            x = Operand(dt, gen_values(rng, dt, xs, (-2, 2)))
            w = Operand(dt, gen_values(rng, dt, ws, (-2, 2)))
            exp, scale = conv_ref(x.values, w.values, st, lo, hi, dil, idil, groups)
            k = int(np.prod(ws[1:]))
            add_case("conv", cid, dt, [x, w], [expected_json(dt, exp, scale)],
                     params={"spatial_rank": len(st), "strides": st, "padding_lo": lo, "padding_hi": hi,
                             "dilations": dil, "input_dilations": idil, "groups": groups}, tol="matmul", k=k)
        add_large("conv", dt + "/large", dt, [(dt, [4, 16, 32, 32], [-1, 1]), (dt, [32, 16, 3, 3], [-1, 1])],
                  [(dt, [4, 32, 32, 32])],
                  params={"spatial_rank": 2, "strides": [1, 1], "padding_lo": [1, 1], "padding_hi": [1, 1],
                          "dilations": [1, 1], "input_dilations": [1, 1], "groups": 1}, tol="matmul", k=144)


WINDOW_IDENT = {"window_sum": 0.0, "window_prod": 1.0, "window_max": -math.inf, "window_min": math.inf}


def window_positions(shape, window, strides, lo, hi, dil):
    out_shape = [conv_out(shape[i], window[i], strides[i], lo[i], hi[i], dil[i], 1) for i in range(len(shape))]
    return out_shape


def window_ref(name, x, window, strides, lo, hi, dil, dt):
    x = np.asarray(x, dtype=object)
    osh = window_positions(x.shape, window, strides, lo, hi, dil)
    out = np.empty(osh, dtype=object)
    scale = np.zeros(osh, dtype=np.float64)
    for opos in np.ndindex(*osh):
        vals = []
        for wpos in np.ndindex(*window):
            p = [opos[i] * strides[i] + wpos[i] * dil[i] - lo[i] for i in range(len(osh))]
            if all(0 <= p[i] < x.shape[i] for i in range(len(p))):
                vals.append(float(x[tuple(p)]) if is_float(dt) else int(x[tuple(p)]))
            else:
                vals.append(WINDOW_IDENT[name] if is_float(dt) else None)
        vals = [v for v in vals if v is not None] if not is_float(dt) else vals
        if name == "window_sum":
            r = math.fsum(vals) if is_float(dt) else sum(vals)
            scale[opos] = sum(abs(v) for v in vals) if is_float(dt) else 0
        elif name == "window_prod":
            r = 1.0 if is_float(dt) else 1
            for v in vals:
                r *= v
            scale[opos] = abs(r) if is_float(dt) else 0
        elif name == "window_max":
            r = max(vals)
        else:
            r = min(vals)
        out[opos] = r if is_float(dt) else wrap_int(r, dt)
    return out, scale


WINDOW_CONFIGS = [
    ("pool2x2", [1, 2, 4, 6], [1, 1, 2, 2], [1, 1, 2, 2], [0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]),
    ("pad_overlap", [2, 5, 5], [1, 3, 3], [1, 2, 1], [0, 1, 1], [0, 1, 1], [1, 1, 1]),
    ("dilated", [7, 6], [2, 2], [1, 2], [0, 0], [0, 1], [2, 1]),
    ("1d", [10], [3], [1], [1], [1], [1]),
]


def family_window():
    for name in ("window_sum", "window_prod", "window_max", "window_min"):
        for dt in FLOATS + ["i32", "i64"]:
            for cid_s, shape, win, st, lo, hi, dil in WINDOW_CONFIGS:
                cid = "%s/%s" % (dt, cid_s)
                rng = rng_for(name, cid)
                vals = gen_values(rng, dt, shape, (0.5, 1.5) if name == "window_prod" else (-3, 3)) if is_float(dt) else \
                    rand_ints(rng, shape, dt, -3, 3)
                x = Operand(dt, vals)
                if not is_float(dt) and any(lo + hi) and name in ("window_max", "window_min", "window_prod", "window_sum"):
                    pass
                exp, scale = window_ref(name, x.values, win, st, lo, hi, dil, dt)
                tol = "reduce" if is_float(dt) and name in ("window_sum", "window_prod") else "exact"
                add_case(name, cid, dt, [x], [expected_json(dt, exp, scale if name == "window_sum" and tol == "reduce" else None)],
                         params={"rank": len(shape), "window": win, "strides": st, "padding_lo": lo, "padding_hi": hi,
                                 "dilations": dil, "init_value": WINDOW_IDENT[name]}, tol=tol, k=int(np.prod(win)))
            if dt in ("f32", "i32"):
                add_large(name, dt + "/large", dt, [(dt, [8, 16, 64, 64], [0.9, 1.1] if name == "window_prod" else [-3, 3])],
                          [(dt, [8, 16, 32, 32])],
                          params={"rank": 4, "window": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "padding_lo": [0] * 4,
                                  "padding_hi": [0] * 4, "dilations": [1] * 4, "init_value": WINDOW_IDENT[name]},
                          tol="reduce" if is_float(dt) and name in ("window_sum", "window_prod") else "exact", k=4)
    for name in ("window_scatter_max", "window_scatter_min"):
        for dt in FLOATS + ["i32"]:
            for cid_s, shape, win, st, lo, hi, dil in WINDOW_CONFIGS[:2] + WINDOW_CONFIGS[3:]:
                cid = "%s/%s" % (dt, cid_s)
                rng = rng_for(name, cid)
                # distinct operand values so that the selected position is unambiguous
                n = int(np.prod(shape))
                perm = rng.permutation(n).reshape(shape)
                x = Operand(dt, (perm - n // 2).astype(np.float64) / (4 if is_float(dt) else 1) if is_float(dt) else perm - n // 2)
                osh = window_positions(shape, win, st, lo, hi, dil)
                src = Operand(dt, gen_values(rng, dt, osh, (-2, 2)) if is_float(dt) else rand_ints(rng, osh, dt, -3, 3))
                init = 0.5 if is_float(dt) else 2.0
                out = np.full(shape, init if is_float(dt) else int(init), dtype=object)
                xv = np.asarray(x.values, dtype=object)
                sv = np.asarray(src.values, dtype=object)
                for opos in np.ndindex(*osh):
                    best, bpos = None, None
                    for wpos in np.ndindex(*win):
                        p = tuple(opos[i] * st[i] + wpos[i] * dil[i] - lo[i] for i in range(len(shape)))
                        if all(0 <= p[i] < shape[i] for i in range(len(p))):
                            v = xv[p]
                            if best is None or (v > best if name.endswith("max") else v < best):
                                best, bpos = v, p
                    if bpos is not None:
                        out[bpos] = out[bpos] + sv[opos]
                add_case(name, cid, dt, [x, src], [expected_json(dt, out)],
                         params={"rank": len(shape), "window": win, "strides": st, "padding_lo": lo, "padding_hi": hi,
                                 "dilations": dil, "init_value": init}, tol="reduce" if is_float(dt) else "exact", k=int(np.prod(win)))


# ---- indexing and sorting ----------------------------------------------------------------------

def family_index():
    for dt in FLOATS + ["i32", "i64", "u8", "bool"]:
        for idt in ("i64", "i32"):
            for cid_s, shape, axis, ids, lay in (("axis0", [5, 3], 0, [4, 0, 2, 2], "contiguous"),
                                                 ("axis1", [3, 6], 1, [5, 1], "contiguous"),
                                                 ("transposed", [4, 5], 1, [0, 4, 3], "transposed"),
                                                 ("empty_ids", [3, 2], 0, [], "contiguous"),
                                                 ("rank3", [2, 3, 4], 2, [3, 3, 0], "contiguous")):
                cid = "%s/%s/%s" % (dt, idt, cid_s)
                rng = rng_for("index_select", cid)
                x = Operand(dt, gen_values(rng, dt, shape, (-5, 5)), lay)
                i = Operand(idt, np.array(ids, dtype=object))
                exp = np.take(np.asarray(x.values, dtype=object), np.array(ids, dtype=np.int64), axis=axis)
                add_case("index_select", cid, dt, [x, i], [expected_json(dt, exp)], params={"axis": axis, "flag": 0})
        add_large("index_select", dt + "/large", dt, [(dt, [500, 300], [-5, 5]), ("i64", [400], ["index", 500])],
                  [(dt, [400, 300])], params={"axis": 0, "flag": 0})

    modes = {0: "set", 1: "add", 2: "mul", 3: "max", 4: "min"}

    def combine(mode, old, new, dt):
        if mode == 0:
            return new
        if mode == 1:
            r = old + new
        elif mode == 2:
            r = old * new
        elif mode == 3:
            r = fmax(old, new) if is_float(dt) else max(old, new)
        else:
            r = fmin(old, new) if is_float(dt) else min(old, new)
        return r if is_float(dt) else wrap_int(r, dt)

    for dt in FLOATS + ["i32", "i64"]:
        for mode in modes:
            for cid_s, shape, axis, ids in (("axis0", [5, 3], 0, [4, 0, 2]), ("axis1", [3, 6], 1, [5, 1, 5, 2])):
                if mode == 0 and len(set(ids)) != len(ids):
                    ids = sorted(set(ids))
                cid = "%s/%s/%s" % (dt, modes[mode], cid_s)
                rng = rng_for("index_reduce", cid)
                x = Operand(dt, gen_values(rng, dt, shape, (-3, 3)))
                sshape = list(shape)
                sshape[axis] = len(ids)
                s = Operand(dt, gen_values(rng, dt, sshape, (-3, 3)))
                i = Operand("i64", np.array(ids, dtype=object))
                out = np.array(np.asarray(x.values, dtype=object))
                sv = np.asarray(s.values, dtype=object)
                for pos in np.ndindex(*sshape):
                    tgt = list(pos)
                    tgt[axis] = ids[pos[axis]]
                    tgt = tuple(tgt)
                    out[tgt] = combine(mode, out[tgt], sv[pos], dt)
                tol = "reduce" if is_float(dt) and mode in (1, 2) else "exact"  # one rounding per duplicate
                add_case("index_reduce", cid, dt, [x, i, s], [expected_json(dt, out)], params={"axis": axis, "flag": mode},
                         tol=tol, k=len(ids) + 1)
        add_large("index_reduce", dt + "/add/large", dt, [(dt, [500, 64], [-3, 3]), ("i64", [300], ["index", 500]), (dt, [300, 64], [-3, 3])],
                  [(dt, [500, 64])], params={"axis": 0, "flag": 1}, tol="reduce" if is_float(dt) else "exact", k=8)

    for dt in FLOATS + ["i32", "i64", "bool"]:
        for cid_s, shape, axis, ishape in (("axis0", [4, 3], 0, [2, 3]), ("axis1", [3, 5], 1, [3, 4]),
                                           ("rank3", [2, 3, 4], 2, [2, 3, 2])):
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("gather_elements", cid)
            x = Operand(dt, gen_values(rng, dt, shape, (-5, 5)))
            ids = rng.integers(0, shape[axis], size=ishape)
            i = Operand("i64", ids)
            xv = np.asarray(x.values, dtype=object)
            out = np.empty(ishape, dtype=object)
            for pos in np.ndindex(*ishape):
                src = list(pos)
                src[axis] = int(ids[pos])
                out[pos] = xv[tuple(src)]
            add_case("gather_elements", cid, dt, [x, i], [expected_json(dt, out)], params={"axis": axis, "flag": 0})
        add_large("gather_elements", dt + "/large", dt, [(dt, [300, 400], [-5, 5]), ("i64", [300, 200], ["index", 400])],
                  [(dt, [300, 200])], params={"axis": 1, "flag": 0})

    for dt in FLOATS + ["i32", "i64"]:
        for mode in modes:
            for cid_s, shape, axis, ishape in (("axis0", [4, 3], 0, [2, 3]), ("axis1", [3, 5], 1, [3, 3])):
                cid = "%s/%s/%s" % (dt, modes[mode], cid_s)
                rng = rng_for("scatter_elements", cid)
                x = Operand(dt, gen_values(rng, dt, shape, (-3, 3)))
                ids = np.zeros(ishape, dtype=np.int64)
                for pos in np.ndindex(*[1 if a == axis else d for a, d in enumerate(ishape)]):
                    # distinct targets along the axis for "set" (duplicates would be unordered)
                    perm = rng.permutation(shape[axis])[:ishape[axis]] if mode == 0 else \
                        rng.integers(0, shape[axis], size=ishape[axis])
                    for j in range(ishape[axis]):
                        p = list(pos)
                        p[axis] = j
                        ids[tuple(p)] = perm[j]
                i = Operand("i64", ids)
                s = Operand(dt, gen_values(rng, dt, ishape, (-3, 3)))
                out = np.array(np.asarray(x.values, dtype=object))
                sv = np.asarray(s.values, dtype=object)
                for pos in np.ndindex(*ishape):
                    tgt = list(pos)
                    tgt[axis] = int(ids[pos])
                    out[tuple(tgt)] = combine(mode, out[tuple(tgt)], sv[pos], dt)
                tol = "reduce" if is_float(dt) and mode in (1, 2) else "exact"  # one rounding per duplicate
                add_case("scatter_elements", cid, dt, [x, i, s], [expected_json(dt, out)],
                         params={"axis": axis, "flag": mode}, tol=tol, k=ishape[axis] + 1)

    for dt in FLOATS + ["i32", "i64", "u8", "i8"]:
        for desc in (0, 1):
            for stable in (1, 0):
                for cid_s, shape, axis, lay in (("axis1", [3, 8], 1, "contiguous"), ("axis0", [6, 2], 0, "contiguous"),
                                                ("transposed", [4, 5], 1, "transposed"), ("ties", [2, 9], 1, "contiguous")):
                    cid = "%s/%s/%s/%s" % (dt, "desc" if desc else "asc", "stable" if stable else "unstable", cid_s)
                    rng = rng_for("sort", cid)
                    if cid_s == "ties":
                        vals = rand_ints(rng, shape, "i32", 0, 2)
                        vals = vals.astype(np.float64) if is_float(dt) else vals
                    elif is_float(dt):
                        vals = gen_values(rng, dt, shape, (-5, 5))
                    else:
                        vals = rand_ints(rng, shape, dt)
                    x = Operand(dt, vals, lay)
                    v, i = sort_ref(x.values, axis, desc, dt)
                    add_case("sort", cid, dt, [x], [expected_json(dt, v), expected_json("i64", i)],
                             params={"axis": axis, "descending": desc, "stable": stable},
                             check=None if stable else "sort_indices")
                if is_float(dt):
                    x = Operand(dt, np.array([[3.0, math.nan, -math.inf, 1.0, math.inf, -0.5, math.nan, 2.0]]))
                    v, i = sort_ref(x.values, 1, desc, dt)
                    add_case("sort", "%s/%s/stable/adversarial" % (dt, "desc" if desc else "asc"), dt, [x],
                             [expected_json(dt, v), expected_json("i64", i)],
                             params={"axis": 1, "descending": desc, "stable": 1})
        add_large("sort", dt + "/large", dt, [(dt, [100, 1000], [-1000, 1000])], [(dt, [100, 1000]), ("i64", [100, 1000])],
                  params={"axis": 1, "descending": 0, "stable": 1}, check=None)


def sort_ref(x, axis, desc, dt):
    arr = np.asarray(x, dtype=object)
    vals = np.empty(arr.shape, dtype=object)
    idxs = np.empty(arr.shape, dtype=object)
    for idx in np.ndindex(*[1 if i == axis else d for i, d in enumerate(arr.shape)]):
        items = []
        for j in range(arr.shape[axis]):
            p = list(idx)
            p[axis] = j
            v = arr[tuple(p)]
            items.append((float(v) if is_float(dt) else int(v), j))

        def key(t):
            v = t[0]
            nan = isinstance(v, float) and math.isnan(v)
            if desc:
                return (0 if nan else 1, 0 if nan else -v, t[1])
            return (1 if nan else 0, 0 if nan else v, t[1])
        items.sort(key=key)
        for j, (v, orig) in enumerate(items):
            p = list(idx)
            p[axis] = j
            vals[tuple(p)] = v
            idxs[tuple(p)] = orig
    return vals, idxs


# ---- fused -------------------------------------------------------------------------------------

def along_lines(fn, x, axes):
    """fn(list of float64) -> list, applied to every line over `axes` of x (float64 result)."""
    arr = np.asarray(x, dtype=np.float64)
    axes = tuple(a % arr.ndim for a in axes)
    tail = tuple(range(arr.ndim - len(axes), arr.ndim))
    moved = np.moveaxis(arr, axes, tail)
    out = np.empty(moved.shape, dtype=np.float64)
    for idx in np.ndindex(*moved.shape[:moved.ndim - len(axes)]):
        out[idx] = np.array(fn(moved[idx].ravel().tolist()), dtype=np.float64).reshape(moved[idx].shape)
    return np.moveaxis(out, tail, axes)


def softmax_ref(x, axis, log):
    return along_lines(lambda line: crmath.softmax_line(line, log), x, (axis,))


def batched_matmul(a, b):
    """a @ b over the last two axes (leading axes equal), each element an exact dot product
    rounded once (np.matmul goes to a BLAS whose kernels, and so last bits, vary by CPU)."""
    out = np.empty(a.shape[:-1] + (b.shape[-1],), dtype=np.float64)
    for idx in np.ndindex(*out.shape):
        lead, i, j = idx[:-2], idx[-2], idx[-1]
        out[idx] = crmath.dot(a[lead + (i,)].tolist(), b[lead + (slice(None), j)].tolist())
    return out


def family_fused():
    for name in ("softmax", "log_softmax"):
        for dt in FLOATS:
            for cid_s, shape, axis, lay, dom in (("axis1", [3, 7], 1, "contiguous", (-4, 4)), ("axis0", [5, 3], 0, "contiguous", (-4, 4)),
                                                 ("transposed", [4, 6], 1, "transposed", (-4, 4)),
                                                 ("large_values", [2, 5], 1, "contiguous", (900, 1000)),
                                                 ("long", [2, 200], 1, "contiguous", (-4, 4))):
                cid = "%s/%s" % (dt, cid_s)
                if dt in ("f16", "bf16") and cid_s == "large_values":
                    dom = (40, 60)
                rng = rng_for(name, cid)
                x = Operand(dt, gen_values(rng, dt, shape, dom), lay)
                exp = softmax_ref(x.values, axis, name == "log_softmax")
                # log_softmax = x - max - log(sum): its error scales with |x|, not with the result.
                scale = np.abs(np.asarray(x.values, dtype=np.float64)) if name == "log_softmax" else None
                add_case(name, cid, dt, [x], [expected_json(dt, exp, scale)], params={"axis": axis, "flag": 0}, tol="norm",
                         k=shape[axis])
            add_large(name, dt + "/large", dt, [(dt, [256, 1000], [-5, 5])], [(dt, [256, 1000])],
                      params={"axis": 1, "flag": 0}, tol="norm", k=1000)

    for dt in FLOATS:
        for cid_s, shape, naxes, affine in (("last", [3, 8], 1, 2), ("last2", [2, 3, 4], 2, 2), ("no_affine", [4, 6], 1, 0),
                                            ("weight_only", [3, 5], 1, 1), ("long", [2, 300], 1, 2)):
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("layer_norm", cid)
            x = Operand(dt, gen_values(rng, dt, shape, (-3, 3)))
            nshape = shape[len(shape) - naxes:]
            ins = [x]
            xv = np.asarray(x.values, dtype=np.float64)
            axes = tuple(range(len(shape) - naxes, len(shape)))
            eps = 1e-5
            y = along_lines(lambda line: crmath.norm_line(line, eps, rms=False), xv, axes)
            if affine >= 1:
                w = Operand(dt, gen_values(rng, dt, nshape, (0.5, 1.5)))
                ins.append(w)
                y = y * np.asarray(w.values, dtype=np.float64)
            if affine >= 2:
                b = Operand(dt, gen_values(rng, dt, nshape, (-1, 1)))
                ins.append(b)
                y = y + np.asarray(b.values, dtype=np.float64)
            add_case("layer_norm", cid, dt, ins, [expected_json(dt, y)], params={"num_axes": naxes, "epsilon": eps},
                     tol="norm", k=int(np.prod(nshape)))
        add_large("layer_norm", dt + "/large", dt, [(dt, [256, 768], [-3, 3]), (dt, [768], [0.5, 1.5]), (dt, [768], [-1, 1])],
                  [(dt, [256, 768])], params={"num_axes": 1, "epsilon": 1e-5}, tol="norm", k=768)

        for cid_s, shape, weight in (("weight", [3, 8], True), ("no_weight", [4, 5], False), ("rank3", [2, 3, 6], True)):
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("rms_norm", cid)
            x = Operand(dt, gen_values(rng, dt, shape, (-3, 3)))
            xv = np.asarray(x.values, dtype=np.float64)
            eps = 1e-6
            y = along_lines(lambda line: crmath.norm_line(line, eps, rms=True), xv, (-1,))
            ins = [x]
            if weight:
                w = Operand(dt, gen_values(rng, dt, [shape[-1]], (0.5, 1.5)))
                ins.append(w)
                y = y * np.asarray(w.values, dtype=np.float64)
            add_case("rms_norm", cid, dt, ins, [expected_json(dt, y)], params={"num_axes": 1, "epsilon": eps},
                     tol="norm", k=shape[-1])
        add_large("rms_norm", dt + "/large", dt, [(dt, [256, 768], [-3, 3]), (dt, [768], [0.5, 1.5])],
                  [(dt, [256, 768])], params={"num_axes": 1, "epsilon": 1e-6}, tol="norm", k=768)

        for cid_s, shape in (("nc", [4, 3]), ("nchw", [2, 3, 4, 5])):
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("batch_norm", cid)
            C = shape[1]
            x = Operand(dt, gen_values(rng, dt, shape, (-3, 3)))
            mean = Operand(dt, gen_values(rng, dt, [C], (-1, 1)))
            var = Operand(dt, gen_values(rng, dt, [C], (0.5, 2)))
            w = Operand(dt, gen_values(rng, dt, [C], (0.5, 1.5)))
            b = Operand(dt, gen_values(rng, dt, [C], (-1, 1)))
            sh = [1, C] + [1] * (len(shape) - 2)
            f = lambda o: np.asarray(o.values, dtype=np.float64).reshape(sh)
            eps = 1e-5
            y = vmap(lambda *a: crmath.batch_norm(*a, eps), x.values, f(mean), f(var), f(w), f(b)).astype(np.float64)
            add_case("batch_norm", cid, dt, [x, mean, var, w, b], [expected_json(dt, y)],
                     params={"num_axes": 0, "epsilon": eps}, tol="norm", k=1)
        add_large("batch_norm", dt + "/large", dt, [(dt, [16, 64, 32, 32], [-3, 3]), (dt, [64], [-1, 1]), (dt, [64], [0.5, 2]),
                                                    (dt, [64], [0.5, 1.5]), (dt, [64], [-1, 1])],
                  [(dt, [16, 64, 32, 32])], params={"num_axes": 0, "epsilon": 1e-5}, tol="norm", k=1)

        for cid_s, qs, ks, vs, mask, causal in (("basic", [2, 3, 4], [2, 5, 4], [2, 5, 3], False, 0),
                                                ("mask", [1, 4, 8], [1, 6, 8], [1, 6, 8], True, 0),
                                                ("causal", [2, 1, 5, 4], [2, 1, 5, 4], [2, 1, 5, 4], False, 1)):
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("attention", cid)
            q = Operand(dt, gen_values(rng, dt, qs, (-1, 1)))
            k = Operand(dt, gen_values(rng, dt, ks, (-1, 1)))
            v = Operand(dt, gen_values(rng, dt, vs, (-1, 1)))
            scale = 1 / math.sqrt(qs[-1])
            qv, kv, vv = (np.asarray(o.values, dtype=np.float64) for o in (q, k, v))
            s = batched_matmul(qv, np.swapaxes(kv, -1, -2)) * scale
            ins = [q, k, v]
            if mask:
                m = Operand(dt, gen_values(rng, dt, [qs[-2], ks[-2]], (-2, 0)), "broadcast", s.shape)
                ins.append(m)
                s = s + np.asarray(m.values, dtype=np.float64)
            if causal:
                L, S = s.shape[-2], s.shape[-1]
                s = np.where(np.arange(S)[None, :] > np.arange(L)[:, None], -np.inf, s)
            p = softmax_ref(s, -1, False)
            y = batched_matmul(p, vv)
            add_case("attention", cid, dt, ins, [expected_json(dt, y)], params={"scale": scale, "causal": causal},
                     tol="norm", k=ks[-2])
        add_large("attention", dt + "/large", dt, [(dt, [4, 8, 128, 64], [-1, 1]), (dt, [4, 8, 128, 64], [-1, 1]),
                                                   (dt, [4, 8, 128, 64], [-1, 1])], [(dt, [4, 8, 128, 64])],
                  params={"scale": 0.125, "causal": 1}, tol="norm", k=128)

        # One Adam / AdamW step (wick_plugin.h, WICK_OP_ADAM_UPDATE), worked in f64 from the rounded
        # inputs; m' and v' are two products and a sum, p' a few more operations.
        for cid_s, shape, flags, wd, step in (("adam", [7], 0, 0.01, 1), ("adam/matrix", [3, 5], 0, 0.0, 3),
                                              ("adamw", [4, 6], 1, 0.1, 10)):
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("adam_update", cid)
            p_ = Operand(dt, gen_values(rng, dt, shape, (-2, 2)))
            g_ = Operand(dt, gen_values(rng, dt, shape, (-1, 1)))
            m_ = Operand(dt, gen_values(rng, dt, shape, (-0.5, 0.5)))
            v_ = Operand(dt, gen_values(rng, dt, shape, (0, 1)))
            lr, b1, b2, eps = 1e-2, 0.9, 0.999, 1e-8
            c1, c2 = 1 - math.prod([b1] * step), 1 - math.prod([b2] * step)  # products: no libm pow
            pv, gv, mv, vv = (np.asarray(o.values, dtype=np.float64) for o in (p_, g_, m_, v_))
            if flags & 1:
                pv = pv * (1 - lr * wd)
            else:
                gv = gv + wd * pv
            m2 = b1 * mv + (1 - b1) * gv
            v2 = b2 * vv + (1 - b2) * gv * gv
            p2 = pv - (lr / c1) * m2 / (np.sqrt(v2) / math.sqrt(c2) + eps)
            add_case("adam_update", cid, dt, [p_, g_, m_, v_],
                     [expected_json(dt, p2), expected_json(dt, m2), expected_json(dt, v2)],
                     params={"lr": lr, "beta1": b1, "beta2": b2, "eps": eps, "weight_decay": wd,
                             "bias_correction1": c1, "bias_correction2": c2, "flags": flags},
                     tol="norm", k=4)
        add_large("adam_update", dt + "/large", dt, [(dt, [1024, 1024], [-1, 1]), (dt, [1024, 1024], [-1, 1]),
                                                     (dt, [1024, 1024], [-0.5, 0.5]), (dt, [1024, 1024], [0, 1])],
                  [(dt, [1024, 1024]), (dt, [1024, 1024]), (dt, [1024, 1024])],
                  params={"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0,
                          "bias_correction1": 0.1, "bias_correction2": 0.001, "flags": 0}, tol="norm", k=4)


# ---- output ------------------------------------------------------------------------------------

def write(outdir):
    os.makedirs(outdir, exist_ok=True)
    for op, code in OPS.items():
        lines = ['{"format":%d,"generator":"conformance/golden/generate.py","base_seed":%d,"op":"%s","op_code":%d,'
                 % (FORMAT, BASE_SEED, op, code)]
        lines.append('"cases":[')
        cases = CASES[op]
        for i, c in enumerate(cases):
            lines.append(json.dumps(c, separators=(",", ":"), allow_nan=False) + ("," if i + 1 < len(cases) else ""))
        lines.append('],"large":[')
        large = LARGE[op]
        for i, c in enumerate(large):
            lines.append(json.dumps(c, separators=(",", ":"), allow_nan=False) + ("," if i + 1 < len(large) else ""))
        lines.append("]}")
        with open(os.path.join(outdir, op + ".json"), "w", encoding="ascii", newline="\n") as f:
            f.write("\n".join(lines) + "\n")


def check_dtype_classes():
    """Every case's dtype is one the op table defines the op for (its DTYPES column)."""
    classes = {"ANY": set(ALL), "NUM": set(FLOATS + INTS), "FLOAT": set(FLOATS), "INT": set(INTS),
               "INT_BOOL": set(INTS + ["bool"])}
    for op, cases in CASES.items():
        allowed = classes[OP_TABLE[op]["dtypes"]]
        for c in cases:
            dt = c["dtype"].split("->")[0]
            if dt not in allowed:
                sys.exit("generate.py: case %s has dtype %s, outside the op table's %s for %s"
                         % (c["id"], dt, OP_TABLE[op]["dtypes"], op))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    np.seterr(all="ignore")
    family_copy()
    family_fill()
    family_iota()
    family_cast()
    family_rng()
    family_unary()
    family_binary()
    family_where()
    family_reduce()
    family_arg()
    family_cum()
    family_matmul()
    family_conv()
    family_window()
    family_index()
    family_fused()
    check_dtype_classes()
    missing = [op for op in OPS if not CASES[op]]
    if missing:
        sys.exit("generate.py: no cases for " + ", ".join(missing))
    write(outdir)
    total = sum(len(v) for v in CASES.values())
    print("generate.py: %d cases, %d large recipes, %d ops -> %s" % (total, sum(len(v) for v in LARGE.values()), len(OPS), outdir))


if __name__ == "__main__":
    main()
