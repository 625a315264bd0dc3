"""Golden cases of the reductions: reduce_sum/prod/max/min, argmax/argmin and the cumulative ops."""
import math

import numpy as np

from cases import BITS, FLOATS, TINY, Operand, add_case, add_large, expected_json, gen_values, is_float, is_signed, \
    rand_ints, rng_for, wrap_int
from scalar import fmax, fmin


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
        elif not vals:
            out[idx] = empty_identity(name, dt)
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


def empty_identity(name, dt):
    """An integer or bool reduction of no elements (docs/ops/reduce-index.md: the plugin writes the
    identity): 0 and 1 for sum and prod; for max and min the dtype's lowest and highest (bool: false
    and true, the identities of any and all)."""
    if name == "reduce_sum":
        return 0
    if name == "reduce_prod":
        return 1
    if dt == "bool":
        return 0 if name == "reduce_max" else 1
    bits = BITS[dt]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed(dt) else (0, (1 << bits) - 1)
    return lo if name == "reduce_max" else hi


# Zero-size inputs: an empty reduced axis (the identity, also over every axis at once), and a
# non-empty reduced axis of an empty tensor (an empty result).
EMPTY_REDUCE = [("empty_axis0", [0, 3], [0]), ("empty_axis1", [3, 0], [1]), ("empty_all", [2, 0, 3], [0, 1, 2]),
                ("empty_kept", [0, 3], [1])]


def family_reduce_empty():
    for name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
        dtypes = FLOATS + ["i32", "i64", "u8", "i8", "u32", "u64", "i16"]
        for dt in dtypes + (["bool"] if name in ("reduce_max", "reduce_min") else []):
            for cid_s, shape, axes in EMPTY_REDUCE:
                x = Operand(dt, np.zeros(shape))
                exp, scale = reduce_ref(name, x.values, axes, dt)
                tol = "reduce" if is_float(dt) and name in ("reduce_sum", "reduce_prod") else "exact"
                add_case(name, "%s/%s" % (dt, cid_s), dt, [x],
                         [expected_json(dt, exp, scale if tol == "reduce" and name == "reduce_sum" else None)],
                         params={"axes": axes}, tol=tol)


def family_reduce():
    family_reduce_empty()
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
    # An empty arg-reduced axis has no element to point at: the Tensor API raises (as NumPy and
    # PyTorch) and the plugins refuse it, and a case cannot expect an error, so only an empty
    # result (empty_kept: the axis itself is not empty) is a case here.
    for name in ("argmax", "argmin"):
        for dt in FLOATS + ["i32", "i64", "u8", "i8"]:
            for odt in ("i64", "i32"):
                for last in (0, 1):
                    for cid_s, shape, axis, lay in (("axis1", [3, 6], 1, "contiguous"), ("axis0", [5, 3], 0, "contiguous"),
                                                    ("transposed", [4, 5], 1, "transposed"), ("rank3", [2, 3, 4], 1, "contiguous"),
                                                    ("empty_kept", [0, 3], 1, "contiguous")):
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
                                                ("transposed", [4, 5], 1, "transposed"), ("empty", [0, 4], 1, "contiguous"),
                                                ("empty_axis", [4, 0], 1, "contiguous"), ("empty_axis0", [0, 3], 0, "contiguous")):
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
