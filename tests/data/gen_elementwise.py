#!/usr/bin/python3
"""Writes the elementwise fixtures of tests/test_ops_elementwise.cpp into tests/data/elementwise/.

Every expected value is computed here, independently of Wick: NumPy (long double where it has the
function), Python's math module and exact Python integers, with the dtype rules of
docs/ops/elementwise.md. Run with Debian's python3 and NumPy 1.24:

    /usr/bin/python3 tests/data/gen_elementwise.py

The output is deterministic: running it again writes byte-identical files.
"""

import json
import math
import os

import numpy as np

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elementwise")

FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["i8", "u8", "i16", "i32", "i64", "u32", "u64"]
ALL = FLOATS + INTS + ["bool"]
NP_FLOAT = {"f32": np.float32, "f64": np.float64, "f16": np.float16}
BITS = {"i8": 8, "u8": 8, "i16": 16, "i32": 32, "i64": 64, "u32": 32, "u64": 64}
SIGNED = {"i8", "i16", "i32", "i64"}

NAN, INF = float("nan"), float("inf")

# ---- rounding to a dtype ---------------------------------------------------------------------------


def to_bf16(x):
    """Rounds a float to the nearest bfloat16 (via f32, ties to even), returned as a Python float."""
    f = np.array([x], dtype=np.float64).astype(np.float32)
    if np.isnan(f[0]):
        return NAN
    bits = int(f.view(np.uint32)[0])
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def round_to(dtype, x):
    """The value of dtype nearest to x (a Python float or NumPy long double). f16 and bf16 are
    reached through f32, as Wick's casts do."""
    if dtype == "bf16":
        return to_bf16(float(np.float64(x)))
    if dtype == "f16":
        return float(np.float16(np.float32(x)))
    return float(NP_FLOAT[dtype](x))


def wrap(dtype, v):
    """An exact integer reduced modulo 2^bits into dtype's range (two's complement)."""
    bits = BITS[dtype]
    v %= 1 << bits
    if dtype in SIGNED and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_range(dtype):
    bits = BITS[dtype]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype in SIGNED else (0, (1 << bits) - 1)


# ---- JSON encoding (NaN and infinities as strings) ------------------------------------------------


def enc(v):
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, int):
        return v
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def write(name, payload):
    path = os.path.join(OUT_DIR, name)
    text = json.dumps(payload, indent=None, separators=(",", ":"), sort_keys=True)
    # One case per line keeps diffs readable.
    text = text.replace('},{"', '},\n{"')
    with open(path, "w", encoding="ascii") as f:
        f.write(text + "\n")


# ---- inputs ------------------------------------------------------------------------------------------

FLOAT_VALUES = [-100.0, -7.25, -3.5, -2.5, -1.5, -1.0, -0.75, -0.5, -0.25, -0.0, 0.0, 0.25, 0.5, 0.75,
                1.0, 1.5, 2.5, 3.0, 3.5, 10.0, 100.0, NAN, INF, -INF]
ERFINV_VALUES = [-2.0, -1.0, -0.999, -0.9, -0.5, -0.1, 0.0, 0.1, 0.5, 0.9, 0.999, 0.9999, 1.0, 1.5, NAN, INF]
INT_VALUES = {
    "i8": [-128, -127, -100, -7, -2, -1, 0, 1, 2, 3, 7, 100, 127],
    "u8": [0, 1, 2, 3, 7, 100, 127, 128, 200, 254, 255],
    "i16": [-32768, -32767, -300, -7, -1, 0, 1, 2, 7, 300, 32767],
    "i32": [-2147483648, -2147483647, -100000, -7, -1, 0, 1, 2, 7, 100000, 16777217, 2147483647],
    "i64": [-(1 << 63), -(1 << 63) + 1, -(1 << 40), -7, -1, 0, 1, 2, 7, 1 << 40, (1 << 53) + 1, (1 << 63) - 1],
    "u32": [0, 1, 2, 7, 100000, 1 << 31, (1 << 32) - 1],
    "u64": [0, 1, 2, 7, 1 << 40, 1 << 63, (1 << 64) - 1],
    "bool": [0, 1],
}


def inputs(dtype, floats=FLOAT_VALUES):
    if dtype in FLOATS:
        return [round_to(dtype, v) for v in floats]
    return list(INT_VALUES[dtype])


# ---- unary references ---------------------------------------------------------------------------------

LD = np.longdouble


def gelu_tanh(x):
    # 0.5 x (1 + tanh(u)) == x / (1 + exp(-2u)), the form without cancellation for x < 0.
    if x == -INF:
        return 0.0  # the limit (documented)
    u = LD("0.79788456080286535587989211986876") * (x + LD("0.044715") * x * x * x)
    return x / (LD(1) + np.exp(LD(-2) * u))


def gelu_erf(x):
    if x == -INF:
        return 0.0
    return 0.5 * float(x) * math.erfc(-float(x) / math.sqrt(2.0))


def silu(x):
    if x == -INF:
        return 0.0
    return x / (LD(1) + np.exp(-x))


def erfinv(y):
    """Bisection on erf (erfc near +-1, where erf is flat), to the last bit of a double."""
    y = float(y)
    if math.isnan(y) or y < -1.0 or y > 1.0:
        return NAN
    if y in (-1.0, 1.0):
        return math.copysign(INF, y)
    if y == 0.0:
        return y
    sign, t = (1.0, y) if y > 0 else (-1.0, -y)
    lo, hi = 0.0, 10.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        # erf(mid) < t, written without cancellation.
        below = math.erf(mid) < t if t < 0.5 else math.erfc(mid) > 1.0 - t
        lo, hi = (mid, hi) if below else (lo, mid)
    return sign * 0.5 * (lo + hi)


def round_half_away(x):
    if not math.isfinite(x):
        return x
    t = math.trunc(x)
    frac = x - t  # exact
    if abs(frac) >= 0.5:
        t += 1 if x > 0 else -1
    return math.copysign(float(t), x)


FLOAT_UNARY = {
    "exp": lambda x: np.exp(LD(x)),
    "log": lambda x: np.log(LD(x)),
    "sqrt": lambda x: np.sqrt(LD(x)),
    "rsqrt": lambda x: LD(1) / np.sqrt(LD(x)),
    "recip": lambda x: LD(1) / LD(x),
    "tanh": lambda x: np.tanh(LD(x)),
    "erf": lambda x: math.erf(x),
    "sigmoid": lambda x: LD(1) / (LD(1) + np.exp(-LD(x))),
    "sin": lambda x: np.sin(LD(x)),
    "cos": lambda x: np.cos(LD(x)),
    "tan": lambda x: np.tan(LD(x)),
    "asin": lambda x: np.arcsin(LD(x)),
    "acos": lambda x: np.arccos(LD(x)),
    "atan": lambda x: np.arctan(LD(x)),
    "sinh": lambda x: np.sinh(LD(x)),
    "cosh": lambda x: np.cosh(LD(x)),
    "asinh": lambda x: np.arcsinh(LD(x)),
    "acosh": lambda x: np.arccosh(LD(x)),
    "atanh": lambda x: np.arctanh(LD(x)),
    "expm1": lambda x: np.expm1(LD(x)),
    "log1p": lambda x: np.log1p(LD(x)),
    "cbrt": lambda x: np.cbrt(LD(x)),
    "erfc": lambda x: math.erfc(x),
    "erfinv": erfinv,
    "gelu": lambda x: gelu_tanh(LD(x)),
    "gelu_erf": gelu_erf,
    "silu": lambda x: silu(LD(x)),
    "elu": lambda x, alpha: LD(x) if x > 0 else LD(alpha) * np.expm1(LD(x)),
    "powf": lambda x, p: np.power(LD(x), LD(p)),
}
PARAMS = {"elu": [0.5], "powf": [1.5], "affine": [-2.5, 0.75]}

# Ops whose float computation is exact: neg, abs, sign, sqr, relu, affine (in the compute type),
# floor, ceil, round.
EXACT_FLOAT = {
    "neg": lambda x: -x,
    "abs": abs,
    "sign": lambda x: x if math.isnan(x) or x == 0 else math.copysign(1.0, x),
    "sqr": lambda x: x * x,
    "relu": lambda x: x if math.isnan(x) or x > 0 else 0.0,
    "floor": lambda x: float(np.floor(x)),
    "ceil": lambda x: float(np.ceil(x)),
    "round": round_half_away,
    "round_half_even": lambda x: float(np.rint(x)),
}


def apply_float(fn, x, args):
    with np.errstate(all="ignore"):
        return fn(x, *args)


def unary_cases():
    cases = []

    def case(op, dtype, out_dtype, xs, ys, args=()):
        cases.append({"op": op, "args": list(args), "dtype": dtype, "out_dtype": out_dtype,
                      "x": [enc(v) for v in xs], "y": [enc(v) for v in ys]})

    # Float math: floats keep their dtype; integers and bool are converted to f32 first.
    for op, fn in FLOAT_UNARY.items():
        args = PARAMS.get(op, [])
        for dtype in ALL:
            xs = inputs(dtype, ERFINV_VALUES if op == "erfinv" else FLOAT_VALUES)
            out = dtype if dtype in FLOATS else "f32"
            xf = [round_to(out, float(v)) for v in xs]
            ys = [round_to(out, apply_float(fn, v, args)) for v in xf]
            case(op, dtype, out, xs, ys, args)

    # Exact float ops, and their integer meaning.
    for op in ["neg", "abs", "sign", "sqr", "relu", "floor", "ceil", "round", "round_half_even"]:
        for dtype in ALL:
            xs = inputs(dtype)
            if dtype in FLOATS:
                ys = [round_to(dtype, apply_float(EXACT_FLOAT[op], v, ())) for v in xs]
            elif dtype == "bool":
                if op == "neg":
                    continue  # an error (see the unsupported list in the test)
                ys = list(xs)  # identity on {0, 1}
            elif op in ("floor", "ceil", "round", "round_half_even"):
                ys = list(xs)  # integers are whole already
            else:
                exact = {"neg": lambda v: -v, "abs": abs, "sign": lambda v: (v > 0) - (v < 0),
                         "sqr": lambda v: v * v, "relu": lambda v: max(v, 0)}[op]
                ys = [wrap(dtype, exact(v)) for v in xs]
            case(op, dtype, dtype, xs, ys)

    # affine: floats in their compute type (f32 for f16/bf16), integers with whole scalars wrap,
    # fractional scalars make integers f32, bool computes in i64.
    for dtype in ALL:
        xs = inputs(dtype)
        if dtype in FLOATS:
            ct = "f64" if dtype == "f64" else "f32"
            mul, add = (round_to(ct, a) for a in PARAMS["affine"])
            ys = [round_to(dtype, round_to(ct, round_to(ct, v * mul) + add)) for v in xs]
            case("affine", dtype, dtype, xs, ys, PARAMS["affine"])
        else:
            out = "i64" if dtype == "bool" else dtype
            ys = [wrap(out, v * -3 + 1000) for v in xs]
            case("affine", dtype, out, xs, ys, [-3.0, 1000.0])
            ys = [round_to("f32", round_to("f32", round_to("f32", v) * -2.5) + 0.75) for v in xs]
            case("affine", dtype, "f32", xs, ys, PARAMS["affine"])

    # Predicates: any dtype -> bool.
    for dtype in ALL:
        xs = inputs(dtype)
        isf = dtype in FLOATS
        case("isnan", dtype, "bool", xs, [isf and math.isnan(v) for v in xs])
        case("isinf", dtype, "bool", xs, [isf and math.isinf(v) for v in xs])
        case("logical_not", dtype, "bool", xs, [v == 0 for v in xs])

    # Integer bits.
    for dtype in INTS:
        xs = inputs(dtype)
        bits = BITS[dtype]
        mask = (1 << bits) - 1
        case("bitwise_not", dtype, dtype, xs, [wrap(dtype, ~v) for v in xs])
        case("popcount", dtype, dtype, xs, [bin(v & mask).count("1") for v in xs])
        case("clz", dtype, dtype, xs, [bits - (v & mask).bit_length() for v in xs])
    case("bitwise_not", "bool", "bool", [0, 1], [1, 0])
    return cases


# ---- binary references ---------------------------------------------------------------------------------

BINARY_FLOATS = [-3.5, -1.0, -0.5, -0.0, 0.5, 2.0, 7.25, NAN, INF, -INF]


def c_div(a, b):
    """Integer division truncating toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_pow(a, b):
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return a ** b


def shift(dtype, a, b, left):
    bits = BITS[dtype]
    if b < 0 or b >= bits:
        return 0 if left or a >= 0 else -1
    return wrap(dtype, a << b) if left else a >> b  # Python's >> is arithmetic on negative ints


INT_BINARY = {
    "add": lambda d, a, b: wrap(d, a + b),
    "sub": lambda d, a, b: wrap(d, a - b),
    "mul": lambda d, a, b: wrap(d, a * b),
    "div": lambda d, a, b: 0 if b == 0 else wrap(d, c_div(a, b)),
    "maximum": lambda d, a, b: max(a, b),
    "minimum": lambda d, a, b: min(a, b),
    "pow": lambda d, a, b: wrap(d, int_pow(a, b)),
    "rem": lambda d, a, b: 0 if b == 0 else a - c_div(a, b) * b,
    "bitwise_and": lambda d, a, b: a & b,
    "bitwise_or": lambda d, a, b: a | b,
    "bitwise_xor": lambda d, a, b: a ^ b,
    "shl": lambda d, a, b: shift(d, a, b, True),
    "shr": lambda d, a, b: shift(d, a, b, False),
}
FLOAT_BINARY = {
    "add": lambda a, b: LD(a) + LD(b),
    "sub": lambda a, b: LD(a) - LD(b),
    "mul": lambda a, b: LD(a) * LD(b),
    "div": lambda a, b: np.divide(LD(a), LD(b)),
    "maximum": lambda a, b: np.maximum(a, b),
    "minimum": lambda a, b: np.minimum(a, b),
    "pow": lambda a, b: np.power(LD(a), LD(b)),
    "rem": lambda a, b: np.fmod(LD(a), LD(b)),
    "atan2": lambda a, b: np.arctan2(LD(a), LD(b)),
}
COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
BOOL_BINARY = {
    "add": lambda a, b: a | b, "mul": lambda a, b: a & b, "maximum": lambda a, b: a | b,
    "minimum": lambda a, b: a & b, "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b, "bitwise_xor": lambda a, b: a ^ b,
}


def second_operands(op, dtype):
    """The b values: shift counts and exponents get their own sets."""
    if op in ("shl", "shr"):
        bits = BITS[dtype]
        counts = [0, 1, 3, bits - 1, bits, bits + 1]
        return ([-1] if dtype in SIGNED else []) + counts
    if op == "pow":
        return ([-2, -1] if dtype in SIGNED else []) + [0, 1, 2, 3, 7, 100]
    return INT_VALUES[dtype]


def binary_cases():
    """a is a column and b a row: the test broadcasts them to every pair."""
    cases = []

    def case(op, dtype, out_dtype, a, b, y):
        cases.append({"op": op, "dtype": dtype, "out_dtype": out_dtype, "a": [enc(v) for v in a],
                      "b": [enc(v) for v in b], "y": [enc(v) for v in y]})

    for dtype in FLOATS:
        vs = [round_to(dtype, v) for v in BINARY_FLOATS]
        for op, fn in FLOAT_BINARY.items():
            with np.errstate(all="ignore"):
                case(op, dtype, dtype, vs, vs, [round_to(dtype, fn(a, b)) for a in vs for b in vs])
        for op, fn in COMPARE.items():
            case(op, dtype, "bool", vs, vs, [fn(a, b) for a in vs for b in vs])
    for dtype in INTS:
        a = INT_VALUES[dtype]
        for op, fn in INT_BINARY.items():
            b = second_operands(op, dtype)
            case(op, dtype, dtype, a, b, [fn(dtype, x, y) for x in a for y in b])
        for op, fn in COMPARE.items():
            case(op, dtype, "bool", a, a, [fn(x, y) for x in a for y in a])
        # atan2 of integers is float math: computed in f32.
        with np.errstate(all="ignore"):
            af = [round_to("f32", v) for v in a]
            case("atan2", dtype, "f32", a, a, [round_to("f32", np.arctan2(LD(x), LD(y))) for x in af for y in af])
    bools = [0, 1]
    for op, fn in list(BOOL_BINARY.items()) + list(COMPARE.items()):
        case(op, "bool", "bool", bools, bools, [fn(a, b) for a in bools for b in bools])
    case("atan2", "bool", "f32", bools, bools, [round_to("f32", math.atan2(a, b)) for a in bools for b in bools])
    return cases


# ---- Philox-4x32-10 and the RNG streams ------------------------------------------------------------------

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox(ctr, key):
    """Philox-4x32-10 (Salmon et al. 2011), written from the paper: round, then bump the key."""
    c = list(ctr)
    k0, k1 = key
    for r in range(10):
        p0 = M0 * c[0]
        p1 = M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & MASK32, (p0 >> 32) ^ c[3] ^ k1, p0 & MASK32]
        k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
    return c


# Random123's kat_vectors for philox4x32 10: counter, key, expected output.
KAT = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([MASK32] * 4, [MASK32] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


def element_block(seed, offset, i):
    ctr = offset + i  # a 128-bit little-endian counter
    return philox([ctr & MASK32, (ctr >> 32) & MASK32, (ctr >> 64) & MASK32, (ctr >> 96) & MASK32],
                  [seed & MASK32, seed >> 32])


def below(dtype, v, b):
    """The uniform stream's half-open rule: a value that rounds up to b steps down one ulp."""
    if v < b:
        return v
    if dtype in ("f32", "f16"):
        t = np.float32 if dtype == "f32" else np.float16
        return float(np.nextafter(t(v), t(-INF)))
    if dtype == "f64":
        return float(np.nextafter(v, -INF))
    bits = int(np.array([v], dtype=np.float32).view(np.uint32)[0]) >> 16  # bf16
    bits = bits + 1 if bits & 0x8000 else (0x8001 if bits == 0 else bits - 1)
    return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])


def rng_fixture():
    for ctr, key, expected in KAT:
        assert philox(ctr, key) == expected, "the Philox reimplementation fails Random123's KAT"
    # Tensor::rand/randn with an explicit seed start at counter offset 0.
    seed, n = 0x0123456789ABCDEF, 8
    blocks = [element_block(seed, 0, i) for i in range(n)]
    a, b = -2.0, 3.0
    u24 = [(w[0] >> 8) * 2.0 ** -24 for w in blocks]
    u53 = [((w[0] << 21) | (w[1] >> 11)) * 2.0 ** -53 for w in blocks]
    z = [math.sqrt(-2.0 * math.log((w[0] + 1) * 2.0 ** -32)) * math.cos(2.0 * math.pi * (w[1] * 2.0 ** -32))
         for w in blocks]
    # A counter offset whose sum with the element index carries into the third counter word.
    carry_offset = (1 << 64) - 3
    return {
        "seed": seed, "a": a, "b": b, "blocks": blocks,
        "uniform_f32": [below("f32", round_to("f32", a + (b - a) * u), b) for u in u24],
        "uniform_f64": [below("f64", a + (b - a) * u, b) for u in u53],
        "uniform_f16": [below("f16", round_to("f16", a + (b - a) * u), b) for u in u24],
        "uniform_bf16": [below("bf16", round_to("bf16", a + (b - a) * u), b) for u in u24],
        "normal_f64": [a + b * v for v in z],
        "normal_f32": [round_to("f32", a + b * v) for v in z],
        "normal_f16": [round_to("f16", a + b * v) for v in z],
        "normal_bf16": [round_to("bf16", a + b * v) for v in z],
        "carry_offset": carry_offset,
        "carry_blocks": [element_block(seed, carry_offset, i) for i in range(n)],
    }


def main():
    np.seterr(all="ignore")  # overflow to infinity and NaN from domain errors are intended
    os.makedirs(OUT_DIR, exist_ok=True)
    write("unary.json", {"generator": "tests/data/gen_elementwise.py", "cases": unary_cases()})
    write("binary.json", {"generator": "tests/data/gen_elementwise.py", "cases": binary_cases()})
    write("rng.json", rng_fixture())


if __name__ == "__main__":
    main()
