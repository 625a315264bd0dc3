"""Golden cases of the index ops: index_select, index_reduce, gather_elements, scatter_elements, sort."""
import math

import numpy as np

from cases import FLOATS, Operand, add_case, add_large, expected_json, gen_values, is_float, rand_ints, rng_for, \
    wrap_int
from scalar import fmax, fmin


def family_index():
    family_index_select()
    family_index_reduce()
    family_gather_elements()
    family_scatter_elements()
    family_sort()


def family_index_select():
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


# index_reduce's and scatter_elements' flag: how a source value combines with the one it lands on.
MODES = {0: "set", 1: "add", 2: "mul", 3: "max", 4: "min"}


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


def family_index_reduce():
    for dt in FLOATS + ["i32", "i64"]:
        for mode in MODES:
            for cid_s, shape, axis, ids in (("axis0", [5, 3], 0, [4, 0, 2]), ("axis1", [3, 6], 1, [5, 1, 5, 2])):
                if mode == 0 and len(set(ids)) != len(ids):
                    ids = sorted(set(ids))
                cid = "%s/%s/%s" % (dt, MODES[mode], cid_s)
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


def family_gather_elements():
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


def family_scatter_elements():
    for dt in FLOATS + ["i32", "i64"]:
        for mode in MODES:
            for cid_s, shape, axis, ishape in (("axis0", [4, 3], 0, [2, 3]), ("axis1", [3, 5], 1, [3, 3])):
                cid = "%s/%s/%s" % (dt, MODES[mode], cid_s)
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


def family_sort():
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
