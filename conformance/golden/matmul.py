"""Golden cases of matmul: exact dot products rounded once, batched and broadcast batches."""
import math

import numpy as np

from cases import FLOATS, Operand, add_case, add_large, expected_json, gen_values, is_float, rng_for, wrap_int
from scalar import vmap


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
