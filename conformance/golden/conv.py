"""Golden cases of conv, its two gradients (conv_grad_input, conv_grad_weight), the fused conv_bias and
conv_bias_relu, and the window ops
(window_sum/prod/max/min, window_scatter_max/min): sliding windows over strided, padded and dilated
axes, sized by one rule (conv_out)."""
import math

import numpy as np

from cases import FLOATS, Operand, add_case, add_large, expected_json, gen_values, is_float, rand_ints, rng_for, \
    wrap_int


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


CONV_CONFIGS = [
    ("1d", [2, 3, 9], [4, 3, 3], [1], [0], [0], [1], [1], 1),
    ("1d_stride_pad", [1, 2, 10], [3, 2, 4], [2], [1], [2], [1], [1], 1),
    ("2d", [1, 2, 5, 6], [3, 2, 3, 3], [1, 1], [0, 0], [0, 0], [1, 1], [1, 1], 1),
    ("2d_pad_stride_dil", [2, 2, 7, 6], [2, 2, 3, 2], [2, 1], [1, 0], [2, 1], [2, 1], [1, 1], 1),
    ("2d_groups", [1, 4, 5, 5], [6, 2, 3, 3], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 2),
    ("2d_depthwise", [1, 3, 4, 4], [3, 1, 2, 2], [1, 1], [0, 0], [0, 0], [1, 1], [1, 1], 3),
    ("1d_transposed", [1, 2, 5], [2, 2, 3], [1], [2], [2], [1], [2], 1),
    ("3d", [1, 1, 3, 4, 4], [2, 1, 2, 2, 2], [1, 1, 1], [0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1], 1),
]


def family_conv():
    for dt in FLOATS:
        for cid_s, xs, ws, st, lo, hi, dil, idil, groups in CONV_CONFIGS:
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


def family_conv_bias():
    """conv_bias and conv_bias_relu: conv's geometries, plus a bias per output channel and (relu) max(0, y)."""
    for op in ("conv_bias", "conv_bias_relu"):
        for dt in FLOATS:
            for cid_s, xs, ws, st, lo, hi, dil, idil, groups in CONV_CONFIGS:
                cid = "%s/%s" % (dt, cid_s)
                rng = rng_for(op, cid)
                x = Operand(dt, gen_values(rng, dt, xs, (-2, 2)))
                w = Operand(dt, gen_values(rng, dt, ws, (-2, 2)))
                b = Operand(dt, gen_values(rng, dt, [ws[0]], (-2, 2)))
                exp, scale = conv_ref(x.values, w.values, st, lo, hi, dil, idil, groups)
                for idx in np.ndindex(*exp.shape):
                    bias = float(b.values[idx[1]])
                    y = math.fsum([exp[idx], bias])
                    exp[idx] = max(0.0, y) if op == "conv_bias_relu" else y
                    scale[idx] += abs(bias)
                k = int(np.prod(ws[1:])) + 1
                add_case(op, cid, dt, [x, w, b], [expected_json(dt, exp, scale)],
                         params={"spatial_rank": len(st), "strides": st, "padding_lo": lo, "padding_hi": hi,
                                 "dilations": dil, "input_dilations": idil, "groups": groups}, tol="matmul", k=k)


def conv_products(xs, ws, strides, lo, hi, dil, idil, groups):
    """Every product conv forms: (x index, w index, y index) for each tap that reads a real input."""
    N, C = xs[:2]
    O = ws[0]
    sp, ks = xs[2:], ws[2:]
    r = len(sp)
    osp = [conv_out(sp[i], ks[i], strides[i], lo[i], hi[i], dil[i], idil[i]) for i in range(r)]
    cg, og = C // groups, O // groups
    for n in range(N):
        for o in range(O):
            for opos in np.ndindex(*osp):
                for c in range(cg):
                    for kpos in np.ndindex(*ks):
                        ipos = []
                        for i in range(r):
                            p = opos[i] * strides[i] + kpos[i] * dil[i] - lo[i]
                            if p < 0 or p % idil[i] != 0 or p // idil[i] >= sp[i]:
                                break
                            ipos.append(p // idil[i])
                        else:
                            yield (n, o // og * cg + c) + tuple(ipos), (o, c) + kpos, (n, o) + opos
    return osp


def conv_grad_refs(x, w, dy, strides, lo, hi, dil, idil, groups):
    """The gradients of sum(conv(x, w) * dy) with respect to x and w (exact sums), with scales."""
    x, w, dy = (np.asarray(a, dtype=object) for a in (x, w, dy))
    dx_terms, dw_terms = {}, {}
    for xi, wi, yi in conv_products(list(x.shape), list(w.shape), strides, lo, hi, dil, idil, groups):
        dx_terms.setdefault(xi, []).append(float(dy[yi]) * float(w[wi]))
        dw_terms.setdefault(wi, []).append(float(x[xi]) * float(dy[yi]))
    out = []
    for shape, terms in ((x.shape, dx_terms), (w.shape, dw_terms)):
        g = np.empty(shape, dtype=object)
        scale = np.zeros(shape, dtype=np.float64)
        for idx in np.ndindex(*shape):
            t = terms.get(idx, [])
            g[idx] = math.fsum(t)
            scale[idx] = sum(abs(v) for v in t)
        out += [g, scale]
    return out


def family_conv_grad():
    """conv_grad_input (dy, w -> dx) and conv_grad_weight (x, dy -> dw) over conv's geometries, with
    an input row no window reads (its gradient 0) and an empty batch."""
    configs = CONV_CONFIGS + [
    ("2d_unread_rows", [1, 2, 8, 8], [3, 2, 2, 2], [3, 3], [0, 0], [0, 0], [1, 1], [1, 1], 1),
    ("1d_negative_padding", [1, 2, 10], [2, 2, 3], [2], [-1], [1], [1], [1], 1),
    ("1d_empty_batch", [0, 2, 6], [3, 2, 3], [1], [1], [1], [1], [1], 1),
    ]
    for dt in FLOATS:
        for cid_s, xs, ws, st, lo, hi, dil, idil, groups in configs:
            cid = "%s/%s" % (dt, cid_s)
            rng = rng_for("conv_grad", cid)
            ys = [xs[0], ws[0]] + [conv_out(xs[2 + i], ws[2 + i], st[i], lo[i], hi[i], dil[i], idil[i])
                                   for i in range(len(st))]
            x = Operand(dt, gen_values(rng, dt, xs, (-2, 2)))
            w = Operand(dt, gen_values(rng, dt, ws, (-2, 2)))
            dy = Operand(dt, gen_values(rng, dt, ys, (-2, 2)))
            dx, dx_scale, dw, dw_scale = conv_grad_refs(x.values, w.values, dy.values, st, lo, hi, dil, idil,
                                                        groups)
            params = {"spatial_rank": len(st), "strides": st, "padding_lo": lo, "padding_hi": hi,
                      "dilations": dil, "input_dilations": idil, "groups": groups}
            taps = int(np.prod(ws[2:]))
            add_case("conv_grad_input", cid, dt, [dy, w], [expected_json(dt, dx, dx_scale)], params=params,
                     tol="matmul", k=max(1, ws[0] // groups * taps))
            add_case("conv_grad_weight", cid, dt, [x, dy], [expected_json(dt, dw, dw_scale)], params=params,
                     tol="matmul", k=max(1, int(np.prod(ys)) // max(1, ws[0])))
        params = {"spatial_rank": 2, "strides": [1, 1], "padding_lo": [1, 1], "padding_hi": [1, 1],
                  "dilations": [1, 1], "input_dilations": [1, 1], "groups": 1}
        add_large("conv_grad_input", dt + "/large", dt,
                  [(dt, [4, 32, 32, 32], [-1, 1]), (dt, [32, 16, 3, 3], [-1, 1])], [(dt, [4, 16, 32, 32])],
                  params=params, tol="matmul", k=288)
        add_large("conv_grad_weight", dt + "/large", dt,
                  [(dt, [4, 16, 32, 32], [-1, 1]), (dt, [4, 32, 32, 32], [-1, 1])], [(dt, [32, 16, 3, 3])],
                  params=params, tol="matmul", k=4096)


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
