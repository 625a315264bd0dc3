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

This file holds the entry point, the elementwise families (copy, cast, unary, binary, compare,
bitwise, where) and the writer; the rest lies beside it: cases.py (op table, dtypes, seeds, operands,
the registry), scalar.py (scalar references), creation.py (fill, iota, rng), reductions.py,
matmul.py, conv.py (conv, its gradients, conv_bias(_relu) and the window ops), index.py (index ops and sort), fused.py (softmax,
norms, attention, adam_update), quant.py (quantize, dequantize, matmul_quant: GGML blocks).
"""
import json
import math
import os
import sys

import numpy as np

import crmath
from cases import ADVERSARIAL, ALL, BASE_SEED, BITS, CASES, FLOATS, FORMAT, INTS, LARGE, OP_TABLE, OPS, SINTS, \
    TINY, Operand, add_case, add_large, expected_json, gen_values, int_extremes, is_float, is_signed, rand_floats, \
    rand_ints, rng_for, round_float, wrap_int
from conv import family_conv, family_conv_bias, family_conv_grad, family_window
from quant import family_quant
from creation import family_fill, family_iota, family_rng
from fused import family_fused
from index import family_index
from matmul import family_matmul
from reductions import family_arg, family_cum, family_reduce
from scalar import erfinv, fdiv, fhypot, fmax, fmin, fmod, fpow, fsign, int_div, int_rem, ipow, round_half_away, \
    round_half_even, safe, shift, sigmoid, vmap


# ---- unary -------------------------------------------------------------------------------------

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
               "INT_BOOL": set(INTS + ["bool"]), "U8": {"u8"}}
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
    family_conv_grad()
    family_conv_bias()
    family_window()
    family_index()
    family_fused()
    family_quant()
    check_dtype_classes()
    missing = [op for op in OPS if not CASES[op]]
    if missing:
        sys.exit("generate.py: no cases for " + ", ".join(missing))
    write(outdir)
    total = sum(len(v) for v in CASES.values())
    print("generate.py: %d cases, %d large recipes, %d ops -> %s" % (total, sum(len(v) for v in LARGE.values()), len(OPS), outdir))


if __name__ == "__main__":
    main()
