"""Golden cases of the fused ops: softmax, log_softmax, layer_norm, rms_norm, batch_norm, attention and
adam_update, computed by crmath (mpmath, rounded once)."""
import math

import numpy as np

import crmath
from cases import FLOATS, Operand, add_case, add_large, expected_json, gen_values, rng_for
from scalar import vmap


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
    family_softmax()
    family_layer_norm()
    family_rms_norm()
    family_batch_norm()
    family_attention()
    family_adam_update()


def family_softmax():
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


def family_layer_norm():
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


def family_rms_norm():
    for dt in FLOATS:
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


def family_batch_norm():
    for dt in FLOATS:
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


def family_attention():
    for dt in FLOATS:
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
def family_adam_update():
    for dt in FLOATS:
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
