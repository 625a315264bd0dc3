#!/usr/bin/python3
"""Writes the fixtures of tests/test_ops_nn.cpp into tests/data/nn/.

Every expected value is computed here, independently of Wick, with NumPy in f64 or exact int64
arithmetic, by straightforward algorithms (explicit padding, dilation by inserting zeros, sliding
windows, Python loops for select-and-scatter). Run with Debian's python3 and NumPy 1.24:

    /usr/bin/python3 tests/data/gen_nn.py

The output is deterministic: running it again writes byte-identical files.

Integer-valued operands make matmul, conv and the window ops exact in every dtype: the tests cast
the int64 results to narrower integers with wrapping (docs/ops.md) and compare floats with the
dtype's rounding tolerance. Float inputs of the fused ops are multiples of 1/8 in [-4, 4], exact in
bf16 and f16, so only the op's own rounding differs between dtypes.
"""

import json
import os

import numpy as np

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn")


def encode(v):
    """A JSON value for a float: NaN and the infinities as strings (JSON has no literal for them)."""
    v = float(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def ints(a):
    return [int(x) for x in np.asarray(a).ravel()]


def floats(a):
    return [encode(x) for x in np.asarray(a, dtype=np.float64).ravel()]


def tensor(a, as_float=False):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": floats(a) if as_float else ints(a)}


def write(name, cases):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"cases": [\n')
        f.write(",\n".join(json.dumps(c, sort_keys=True) for c in cases))
        f.write("\n]}\n")


def operand(rng, shape, signed, lo=None, hi=None):
    """Small integers: [-3, 3] when signed, else [0, 3] (every dtype, u8 included, holds them)."""
    lo = (-3 if signed else 0) if lo is None else lo
    hi = 3 if hi is None else hi
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64)


# ---- matmul ----------------------------------------------------------------------------------------


def matmul_cases(rng):
    cases = []
    specs = [
        ("2x3 by 3x4", (2, 3), (3, 4), True),
        ("batch broadcast 2x1x3x4 by 3x4x5", (2, 1, 3, 4), (3, 4, 5), True),
        ("vector by matrix", (5,), (5, 3), True),
        ("matrix by vector", (4, 5), (5,), True),
        ("37x61 by 61x45 on the oneDNN path", (37, 61), (61, 45), False),
        ("batched 3x32x40 by 3x40x24 on the oneDNN path", (3, 32, 40), (3, 40, 24), False),
        ("one operand broadcast over the batch 4x24x32 by 32x32", (4, 24, 32), (32, 32), False),
    ]
    for name, sa, sb, signed in specs:
        a, b = operand(rng, sa, signed), operand(rng, sb, signed)
        out = np.matmul(a, b)
        case = {"name": name, "signed": signed, "a": tensor(a), "b": tensor(b), "out": tensor(out)}
        # bool: a logical matrix product (or of ands), as an integer product of 0/1 that is non-zero.
        out_bool = np.matmul((a != 0).astype(np.int64), (b != 0).astype(np.int64)) != 0
        case["out_bool"] = tensor(out_bool.astype(np.int64))
        cases.append(case)
    return cases


# ---- convolution -----------------------------------------------------------------------------------


def conv_nd(x, w, strides, lo, hi, dil, idil, groups):
    """out[n, o, p...] = sum over c, k of xp[n, g*Cg + c, p*s + k*d] * w[o, c, k], where xp is x with
    idil - 1 zeros between elements and then padded (or cropped, for negative padding)."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    r = x.ndim - 2
    # Input dilation: scatter x into a zero array.
    dshape = [n, c] + [(e - 1) * idil[i] + 1 if e > 0 else 0 for i, e in enumerate(x.shape[2:])]
    xd = np.zeros(dshape, dtype=np.int64)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, idil[i]) for i in range(r))] = x
    # Padding: crop for negative values, then pad with zeros.
    crop = tuple(slice(max(-lo[i], 0), xd.shape[2 + i] - max(-hi[i], 0)) for i in range(r))
    xd = xd[(slice(None), slice(None)) + crop]
    xp = np.pad(xd, [(0, 0), (0, 0)] + [(max(lo[i], 0), max(hi[i], 0)) for i in range(r)])
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - ((k[i] - 1) * dil[i] + 1)) // strides[i] + 1 for i in range(r)]
    out = np.zeros([n, o] + out_sp, dtype=np.int64)
    og = o // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for kidx in np.ndindex(*k):
            # The input elements this tap meets at every output position: one strided slice.
            sl = tuple(slice(kidx[i] * dil[i], kidx[i] * dil[i] + (out_sp[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(r))
            patch = xg[(slice(None), slice(None)) + sl]  # [n, cg, out...]
            tap = wg[(slice(None), slice(None)) + kidx]  # [og, cg]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch, tap)
    return out


def conv_cases(rng):
    specs = [
        # name, x shape, w shape, strides, lo, hi, dil, idil, groups, signed
        ("1-d stride 2 padding 1 and 2", (1, 2, 7), (3, 2, 3), [2], [1], [2], [1], [1], 1, True),
        ("2-d 3x3 padding 1", (2, 3, 5, 5), (4, 3, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 1, True),
        ("2-d groups 2 strides dilations asymmetric padding", (1, 4, 6, 7), (6, 2, 2, 3), [2, 1], [0, 2],
         [1, 0], [1, 2], [1, 1], 2, True),
        ("2-d depthwise", (1, 3, 4, 4), (3, 1, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 3, True),
        ("3-d", (1, 2, 4, 3, 5), (2, 2, 2, 2, 3), [1, 1, 2], [1, 0, 1], [1, 0, 1], [1, 1, 1], [1, 1, 1], 1,
         True),
        ("padding larger than the window", (1, 1, 3, 3), (1, 1, 2, 2), [1, 1], [3, 3], [3, 3], [1, 1], [1, 1],
         1, True),
        ("2-d 8 to 16 channels on the oneDNN path", (2, 8, 12, 12), (16, 8, 3, 3), [1, 1], [1, 1], [1, 1],
         [1, 1], [1, 1], 1, False),
        ("2-d strided 2 on the oneDNN path", (1, 16, 9, 9), (8, 16, 3, 3), [2, 2], [0, 0], [1, 1], [1, 1],
         [1, 1], 1, False),
        # Only through the plugin (Tensor::conv has neither): negative padding crops, input dilation
        # makes a transposed convolution.
        ("negative padding crops", (1, 1, 5, 5), (1, 1, 2, 2), [1, 1], [-1, 0], [-1, -2], [1, 1], [1, 1], 1,
         True),
        ("input dilation 2 (transposed convolution)", (1, 2, 3, 3), (2, 2, 3, 3), [1, 1], [2, 2], [2, 2],
         [1, 1], [2, 2], 1, True),
    ]
    cases = []
    for name, sx, sw, st, lo, hi, dil, idil, groups, signed in specs:
        x, w = operand(rng, sx, signed), operand(rng, sw, signed)
        out = conv_nd(x, w, st, lo, hi, dil, idil, groups)
        cases.append({"name": name, "signed": signed, "x": tensor(x), "w": tensor(w), "strides": st,
                      "padding_lo": lo, "padding_hi": hi, "dilations": dil, "input_dilations": idil,
                      "groups": groups, "out": tensor(out)})
    return cases


# ---- window reductions -----------------------------------------------------------------------------

IDENTITY = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def window_nd(x, op, window, strides, lo, hi, dil, identity):
    """Pads x with the identity, takes every dilated window and reduces it."""
    xp = np.pad(x.astype(np.float64), list(zip(lo, hi)), constant_values=identity) if x.ndim else x
    eff = [(window[i] - 1) * dil[i] + 1 for i in range(x.ndim)]
    out_shape = [max((xp.shape[i] - eff[i]) // strides[i] + 1, 0) for i in range(x.ndim)]
    out = np.empty(out_shape, dtype=np.float64)
    for idx in np.ndindex(*out_shape):
        sl = tuple(slice(idx[i] * strides[i], idx[i] * strides[i] + eff[i], dil[i]) for i in range(x.ndim))
        out[idx] = REDUCE[op](xp[sl]) if x.ndim else x
    return out


def window_cases(rng):
    specs = [
        # name, shape, window, strides, lo, hi, dilations, signed
        ("2-d window 2x3 strides 1x2 padded", (4, 5), [2, 3], [1, 2], [1, 0], [0, 2], [1, 1], True),
        ("3-d dilated", (2, 3, 6), [1, 2, 2], [1, 1, 2], [0, 0, 0], [0, 0, 1], [1, 1, 2], True),
        ("pooling 3x3 stride 2 padding 1", (1, 2, 5, 5), [1, 1, 3, 3], [1, 1, 2, 2], [0, 0, 1, 1],
         [0, 0, 1, 1], [1, 1, 1, 1], False),
        ("padding larger than the window", (3,), [2], [1], [3], [3], [1], True),
        ("1-d overlapping windows", (7,), [3], [1], [0], [0], [1], False),
    ]
    cases = []
    for name, shape, window, strides, lo, hi, dil, signed in specs:
        # Products of up to 9 values stay small with factors in [-2, 2].
        x = operand(rng, shape, signed, lo=-2 if signed else 0, hi=2)
        case = {"name": name, "signed": signed, "x": tensor(x), "window": window, "strides": strides,
                "padding_lo": lo, "padding_hi": hi, "dilations": dil}
        for op in ("sum", "prod", "max", "min"):
            # Windows wholly in padding hold the identity: +-inf here, the dtype's range for integers.
            case[op] = tensor(window_nd(x, op, window, strides, lo, hi, dil, IDENTITY[op]), as_float=True)
        # bool operands: max is any, min is all (padding false / true); sum and prod count in i64.
        xb = (x != 0).astype(np.int64)
        case["bool_max"] = tensor(window_nd(xb, "max", window, strides, lo, hi, dil, 0).astype(np.int64))
        case["bool_min"] = tensor(window_nd(xb, "min", window, strides, lo, hi, dil, 1).astype(np.int64))
        case["bool_sum"] = tensor(window_nd(xb, "sum", window, strides, lo, hi, dil, 0).astype(np.int64))
        case["bool_prod"] = tensor(window_nd(xb, "prod", window, strides, lo, hi, dil, 1).astype(np.int64))
        cases.append(case)
    return cases


# ---- select and scatter ----------------------------------------------------------------------------


def scatter_nd(x, src, op, window, strides, lo, hi):
    """For each window, the first (C-order within the window) maximum (minimum) among x's own
    elements gets the source value added; padding is never selected."""
    out = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*src.shape):
        best, best_pos = None, None
        for tap in np.ndindex(*window):
            pos = tuple(idx[i] * strides[i] - lo[i] + tap[i] for i in range(x.ndim))
            if any(p < 0 or p >= x.shape[i] for i, p in enumerate(pos)):
                continue
            v = x[pos]
            if best is None or (v > best if op == "max" else v < best):
                best, best_pos = v, pos
        if best_pos is not None:
            out[best_pos] += src[idx]
    return out


def scatter_cases(rng):
    specs = [
        # name, shape, window, strides, lo, hi
        ("2-d 2x2 stride 2 (max-pool backward)", (4, 6), [2, 2], [2, 2], [0, 0], [0, 0]),
        ("overlapping 3x3 stride 1 with ties", (4, 4), [3, 3], [1, 1], [0, 0], [0, 0]),
        ("padded 4-d pooling 3x3 stride 2 padding 1", (1, 2, 5, 5), [1, 1, 3, 3], [1, 1, 2, 2], [0, 0, 1, 1],
         [0, 0, 1, 1]),
        ("window wholly in padding selects nothing", (3,), [2], [1], [3], [3]),
    ]
    cases = []
    for name, shape, window, strides, lo, hi in specs:
        # Few distinct values: plenty of ties, so that "first wins" matters.
        x = operand(rng, shape, False, lo=0, hi=2)
        out_shape = [max((shape[i] + lo[i] + hi[i] - window[i]) // strides[i] + 1, 0) for i in range(len(shape))]
        src = operand(rng, out_shape, False, lo=1, hi=3)
        case = {"name": name, "x": tensor(x), "source": tensor(src), "window": window, "strides": strides,
                "padding_lo": lo, "padding_hi": hi}
        for op in ("max", "min"):
            case[op] = tensor(scatter_nd(x, src, op, window, strides, lo, hi))
        cases.append(case)
    return cases


# ---- fused ops ---------------------------------------------------------------------------------


def eighths(rng, shape, lo=-4.0, hi=4.0):
    """Multiples of 1/8 in [lo, hi]: exact in f16 and bf16."""
    return rng.integers(int(lo * 8), int(hi * 8) + 1, size=shape).astype(np.float64) / 8.0


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def fused_cases(rng):
    cases = []
    for name, shape, axis in [("softmax rows of 3x7", (3, 7), -1), ("softmax axis 0 of 4x3", (4, 3), 0),
                              ("softmax middle axis of 2x5x3", (2, 5, 3), 1),
                              ("softmax long rows of 2x300", (2, 300), 1)]:
        x = eighths(rng, shape)
        cases.append({"op": "softmax", "name": name, "x": tensor(x, True), "axis": axis,
                      "out": tensor(softmax(x, axis), True)})
        cases.append({"op": "log_softmax", "name": "log_" + name, "x": tensor(x, True), "axis": axis,
                      "out": tensor(log_softmax(x, axis), True)})

    for name, shape, nrank, affine in [("layer_norm last axis of 3x8", (3, 8), 1, "both"),
                                       ("layer_norm last two axes of 2x3x4", (2, 3, 4), 2, "weight"),
                                       ("layer_norm without affine 4x5", (4, 5), 1, "none"),
                                       ("layer_norm rows of 2x256", (2, 256), 1, "both")]:
        x = eighths(rng, shape)
        norm_shape = shape[-nrank:]
        axes = tuple(range(len(shape) - nrank, len(shape)))
        eps = 1e-5
        y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
        case = {"op": "layer_norm", "name": name, "x": tensor(x, True), "normalized_rank": nrank, "eps": eps}
        if affine in ("weight", "both"):
            w = eighths(rng, norm_shape, 0.5, 2.0)
            y = y * w
            case["weight"] = tensor(w, True)
        if affine == "both":
            b = eighths(rng, norm_shape, -1.0, 1.0)
            y = y + b
            case["bias"] = tensor(b, True)
        case["out"] = tensor(y, True)
        cases.append(case)

    for name, shape, with_weight in [("rms_norm 3x8 with weight", (3, 8), True), ("rms_norm 2x2x6", (2, 2, 6), False)]:
        x = eighths(rng, shape)
        eps = 1e-6
        y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
        case = {"op": "rms_norm", "name": name, "x": tensor(x, True), "eps": eps}
        if with_weight:
            w = eighths(rng, shape[-1:], 0.5, 2.0)
            y = y * w
            case["weight"] = tensor(w, True)
        case["out"] = tensor(y, True)
        cases.append(case)

    for name, shape in [("batch_norm 2x3x4", (2, 3, 4)), ("batch_norm 2x2x3x3", (2, 2, 3, 3))]:
        x = eighths(rng, shape)
        c = shape[1]
        mean, var = eighths(rng, (c,), -1, 1), eighths(rng, (c,), 0.25, 2)
        w, b = eighths(rng, (c,), 0.5, 2), eighths(rng, (c,), -1, 1)
        eps = 1e-5
        bshape = (1, c) + (1,) * (len(shape) - 2)
        y = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + eps) * w.reshape(bshape) + b.reshape(bshape)
        cases.append({"op": "batch_norm", "name": name, "x": tensor(x, True), "mean": tensor(mean, True),
                      "var": tensor(var, True), "weight": tensor(w, True), "bias": tensor(b, True), "eps": eps,
                      "out": tensor(y, True)})

    for name, qs, ks, vs, mask, causal, scale in [
            ("attention 4x8 by 6x8", (4, 8), (6, 8), (6, 5), None, False, None),
            ("attention batched 2x3x4x8 causal", (2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), None, True, None),
            ("attention with additive mask and scale", (2, 3, 4), (2, 5, 4), (2, 5, 2), (3, 5), False, 0.25),
            ("attention causal with more keys than queries", (3, 4), (5, 4), (5, 3), None, True, None)]:
        q, k, v = eighths(rng, qs, -2, 2), eighths(rng, ks, -2, 2), eighths(rng, vs, -2, 2)
        sc = 1.0 / np.sqrt(qs[-1]) if scale is None else scale
        s = np.matmul(q, np.swapaxes(k, -1, -2)) * sc
        case = {"op": "attention", "name": name, "q": tensor(q, True), "k": tensor(k, True), "v": tensor(v, True),
                "causal": causal}
        if scale is not None:
            case["scale"] = scale
        if mask is not None:
            m = eighths(rng, mask, -2, 0)
            s = s + m
            case["mask"] = tensor(m, True)
        if causal:
            # Top-left aligned, as PyTorch's is_causal: query i sees keys j <= i.
            lq, lk = qs[-2], ks[-2]
            s = np.where(np.arange(lk)[None, :] > np.arange(lq)[:, None], -np.inf, s)
        case["out"] = tensor(np.matmul(softmax(s, -1), v), True)
        cases.append(case)
    return cases


def main():
    rng = np.random.default_rng(20261130)
    write("matmul.json", matmul_cases(rng))
    write("conv.json", conv_cases(rng))
    write("window.json", window_cases(rng))
    write("scatter.json", scatter_cases(rng))
    write("fused.json", fused_cases(rng))


if __name__ == "__main__":
    main()
