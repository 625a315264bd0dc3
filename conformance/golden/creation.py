"""Golden cases of the ops without inputs: fill, iota, and rng_uniform / rng_normal (Philox streams)."""
import math

import numpy as np

import crmath
from cases import ALL, FLOATS, add_case, add_large, expected_json, int_extremes, is_float, is_signed, round_float, \
    wrap_int
from scalar import vmap


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
