"""The Array API's manipulation, statistical, searching, sorting, set, linear algebra and indexing
functions."""
import builtins
import math

from . import _wick
from ._dtypes import (_check_dtype, _floats, _ints, _signed, _unsigned, default_int, int64,
                      result_type, bool as _bool)
from ._wick import Array


def _axes(x, axis):
    if axis is None:
        return list(range(x.ndim))
    if isinstance(axis, int):
        axis = (axis,)
    out = []
    for a in axis:
        if not -x.ndim <= a < builtins.max(x.ndim, 1):
            raise ValueError(f"axis {a} is out of range for a {x.ndim}-d array")
        out.append(a % x.ndim if x.ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return out


# ---- manipulation ---------------------------------------------------------------------------------

def reshape(x, /, shape, *, copy=None):
    out = x.reshape(list(shape))
    return out.clone() if copy else out


def permute_dims(x, /, axes):
    return x.permute(list(axes))


def matrix_transpose(x, /):
    return x.mT


def broadcast_to(x, /, shape):
    return x.broadcast_to(list(shape))


def broadcast_arrays(*arrays):
    shape = _wick._broadcast_shapes([a.shape for a in arrays]) if hasattr(_wick, "_broadcast_shapes") else None
    if shape is None:
        shape = ()
        for a in arrays:
            shape = _broadcast(shape, a.shape)
    return [a.broadcast_to(list(shape)) for a in arrays]


def _broadcast(s1, s2):
    n = builtins.max(len(s1), len(s2))
    a = (1,) * (n - len(s1)) + tuple(s1)
    b = (1,) * (n - len(s2)) + tuple(s2)
    out = []
    for i, j in zip(a, b):
        if i != j and i != 1 and j != 1:
            raise ValueError(f"shapes {s1} and {s2} do not broadcast")
        out.append(j if i == 1 else i)
    return tuple(out)


def _common(arrays):
    d = result_type(*arrays)
    return [a.astype(d) if a.dtype != d else a for a in arrays]


def concat(arrays, /, *, axis=0):
    arrays = _common(list(arrays))
    if axis is None:
        arrays = [a.reshape([-1]) for a in arrays]
        axis = 0
    return _wick._cat(arrays, axis)


def stack(arrays, /, *, axis=0):
    return _wick._stack(_common(list(arrays)), axis)


def unstack(x, /, *, axis=0):
    axis = _axes(x, axis)[0]
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


def expand_dims(x, /, axis=0):
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(f"expand_dims: axis {axis} is out of range for a {x.ndim}-d array")
    return x.unsqueeze(axis if axis >= 0 else axis + x.ndim + 1)


def squeeze(x, /, axis):
    axes = sorted(_axes(x, axis), reverse=True)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has extent {x.shape[a]}, not 1")
    for a in axes:
        x = x.squeeze(a)
    return x


def flip(x, /, *, axis=None):
    for a in _axes(x, axis):
        x = x.flip(a)
    return x


def moveaxis(x, source, destination, /):
    src = _axes(x, source)
    dst = _axes(x, destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.permute(order)


def roll(x, /, shift, *, axis=None):
    if axis is None:
        return roll(x.reshape([-1]), shift, axis=0).reshape(list(x.shape))
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same length")
    for s, a in zip(shifts, axes):
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s:
            x = _wick._cat([x.slice(a, n - s, None), x.slice(a, 0, n - s)], a)
    return x


def repeat(x, repeats, /, *, axis=None):
    if axis is None:
        x, axis = x.reshape([-1]), 0
    n = x.shape[axis]
    if isinstance(repeats, Array):
        counts = [int(c) for c in repeats.tolist()]
        if len(counts) == 1:
            counts = counts * n
    else:
        counts = [int(repeats)] * n
    if len(counts) != n or builtins.any(c < 0 for c in counts):
        raise ValueError("repeat: repeats must be non-negative, one per element or one for all")
    ids = [i for i, c in enumerate(counts) for _ in range(c)]
    return x.index_select(_wick.asarray(ids, dtype=int64, device=x.device), axis)


def tile(x, repetitions, /):
    reps = tuple(repetitions)
    nd = builtins.max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    x = x.reshape([1] * (nd - x.ndim) + list(x.shape))
    for a, r in enumerate(reps):
        if r != 1:
            x = _wick._cat([x] * r, a) if r > 0 else x.narrow(a, 0, 0)
    return x.clone()


# ---- statistics ------------------------------------------------------------------------------------

def _reduce(name, x, axis, keepdims, dtype=None):
    axes = _axes(x, axis)
    if dtype is not None:
        x = x.astype(_check_dtype(dtype))
    out = getattr(x, name)(axes, keepdims)
    # The core widens integer sums and products; an explicit dtype is the result's.
    return out.astype(dtype) if dtype is not None and out.dtype != dtype else out


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    if dtype is None and x.dtype == _bool:
        dtype = default_int
    return _reduce("sum", x, axis, keepdims, dtype)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    if dtype is None and x.dtype == _bool:
        dtype = default_int
    return _reduce("prod", x, axis, keepdims, dtype)


def _extremum(name, x, axis, keepdims):
    axes = _axes(x, axis)
    for a in axes:
        if x.shape[a] == 0:
            raise ValueError(f"{name}: a reduction over an empty axis has no identity")
    out = getattr(x, name)(axes, keepdims)
    if x.dtype in _floats and axes:
        nan = x.isnan().any(axes, keepdims)
        out = _wick._where(nan, _wick._full((), math.nan, out.dtype, out.device), out)
    return out


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _extremum("max", x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _extremum("min", x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    if x.dtype not in _floats:
        raise TypeError(f"mean: takes a floating-point array, not {x.dtype!r}")
    return _reduce("mean", x, axis, keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    if x.dtype not in _floats:
        raise TypeError(f"var: takes a floating-point array, not {x.dtype!r}")
    axes = _axes(x, axis)
    n = 1
    for a in axes:
        n *= x.shape[a]
    d = x - x.mean(axes, True)
    ss = (d * d).sum(axes, keepdims)
    return ss * (1.0 / (n - correction)) if n - correction > 0 else ss * math.nan


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return var(x, axis=axis, correction=correction, keepdims=keepdims).sqrt()


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    if axis is None:
        if x.ndim > 1:
            raise ValueError("cumulative_sum: axis is required for arrays of more than one dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError("cumulative_sum: needs an array of at least one dimension")
    if dtype is not None:
        x = x.astype(dtype)
    elif x.dtype == _bool or x.dtype in _signed:
        x = x.astype(default_int)
    elif x.dtype in _unsigned:
        x = x.astype(_wick.DType.uint64)
    axis = _axes(x, axis)[0]
    out = x.cumsum(axis)
    if out.dtype != x.dtype:  # the core widens small integers; the result has x's (or dtype's)
        out = out.astype(x.dtype)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = _wick._cat([_wick.zeros(shape, dtype=out.dtype, device=x.device), out], axis)
    return out


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return x.astype(_bool).all(_axes(x, axis), keepdims)


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return x.astype(_bool).any(_axes(x, axis), keepdims)


# ---- searching and sorting -------------------------------------------------------------------------

def _arg(name, x, axis, keepdims):
    if x.size == 0:
        raise ValueError(f"{name}: an empty array has no {name[3:]}imum")
    if axis is None:
        out = getattr(x.reshape([-1]), name)(0, False)
        return out.reshape([1] * x.ndim) if keepdims else out
    return getattr(x, name)(axis, keepdims)


def argmax(x, /, *, axis=None, keepdims=False):
    return _arg("argmax", x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    return _arg("argmin", x, axis, keepdims)


def nonzero(x, /):
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no axes to index")
    flat = x.astype(_bool).reshape([-1]).tolist()
    pos = [i for i, v in enumerate(flat) if v]
    out = []
    for a in range(x.ndim):
        stride = 1
        for d in x.shape[a + 1:]:
            stride *= d
        out.append(_wick.asarray([(p // stride) % x.shape[a] for p in pos], dtype=int64, device=x.device))
    return tuple(out)


def where(condition, x1, x2, /):
    if not isinstance(x1, Array) and isinstance(x2, Array):
        x1 = _wick._operand(x2, x1)
    elif isinstance(x1, Array) and not isinstance(x2, Array):
        x2 = _wick._operand(x1, x2)
    d = result_type(x1, x2)
    return _wick._where(condition, x1.astype(d), x2.astype(d))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', not {side!r}")
    if sorter is not None:
        x1 = x1.index_select(sorter.astype(int64), 0)
    d = result_type(x1, x2)
    a, v = x1.astype(d), x2.astype(d)
    below = (a.reshape([1] * v.ndim + [-1]) < v.unsqueeze(v.ndim)) if side == "left" else \
        (a.reshape([1] * v.ndim + [-1]) <= v.unsqueeze(v.ndim))
    return below.astype(int64).sum([v.ndim], False)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    return x.sort(axis, descending, stable)[0]


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    return x.sort(axis, descending, True)[1]


# ---- sets ------------------------------------------------------------------------------------------

def _unique(x):
    vals = x.reshape([-1]).tolist()
    distinct, index, inverse, counts = [], {}, [], []
    first = []
    for i, v in enumerate(vals):
        key = v if not (isinstance(v, float) and v != v) else ("nan", i)  # every NaN is distinct
        if key not in index:
            index[key] = len(distinct)
            distinct.append(v)
            counts.append(0)
            first.append(i)
        inverse.append(index[key])
        counts[index[key]] += 1
    order = sorted(range(len(distinct)), key=lambda j: (distinct[j] != distinct[j], distinct[j] if distinct[j] == distinct[j] else 0))
    rank = {j: r for r, j in enumerate(order)}
    mk = lambda data, dt: _wick.asarray(data, dtype=dt, device=x.device)  # noqa: E731
    values = mk([distinct[j] for j in order], x.dtype) if order else _wick.zeros((0,), dtype=x.dtype, device=x.device)
    return (values,
            mk([first[j] for j in order], int64) if order else _wick.zeros((0,), dtype=int64, device=x.device),
            mk([rank[k] for k in inverse], int64).reshape(list(x.shape)) if inverse else _wick.zeros(x.shape, dtype=int64, device=x.device),
            mk([counts[j] for j in order], int64) if order else _wick.zeros((0,), dtype=int64, device=x.device))


def unique_values(x, /):
    return _unique(x)[0]


def unique_counts(x, /):
    v, _, _, c = _unique(x)
    return _UniqueCounts(v, c)


def unique_inverse(x, /):
    v, _, inv, _ = _unique(x)
    return _UniqueInverse(v, inv)


def unique_all(x, /):
    return _UniqueAll(*_unique(x))


from collections import namedtuple  # noqa: E402

_UniqueCounts = namedtuple("UniqueCountsResult", "values counts")
_UniqueInverse = namedtuple("UniqueInverseResult", "values inverse_indices")
_UniqueAll = namedtuple("UniqueAllResult", "values indices inverse_indices counts")


# ---- linear algebra and indexing -------------------------------------------------------------------

def matmul(x1, x2, /):
    return x1 @ x2


def vecdot(x1, x2, /, *, axis=-1):
    d = result_type(x1, x2)
    n1 = x1.shape[axis] if x1.ndim else None
    n2 = x2.shape[axis] if x2.ndim else None
    if n1 is None or n1 != n2:
        raise ValueError(f"vecdot: axis {axis} has extents {n1} and {n2}")
    prod = x1.astype(d) * x2.astype(d)
    return prod.sum([axis % prod.ndim], False).astype(d)


def tensordot(x1, x2, /, *, axes=2):
    if isinstance(axes, int):
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1 = [a % x1.ndim for a in axes[0]]
        a2 = [a % x2.ndim for a in axes[1]]
    free1 = [a for a in range(x1.ndim) if a not in a1]
    free2 = [a for a in range(x2.ndim) if a not in a2]
    k = 1
    for a in a1:
        k *= x1.shape[a]
    rows = math.prod(x1.shape[a] for a in free1)
    cols = math.prod(x2.shape[a] for a in free2)
    m = x1.permute(free1 + a1).reshape([rows, k]) if x1.ndim else x1.reshape([1, 1])
    n = x2.permute(a2 + free2).reshape([k, cols]) if x2.ndim else x2.reshape([1, 1])
    d = result_type(x1, x2)
    out = m.astype(d) @ n.astype(d)
    return out.reshape([x1.shape[a] for a in free1] + [x2.shape[a] for a in free2])


def take(x, indices, /, *, axis=None):
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of more than one dimension")
        axis = 0
    n = x.shape[axis]
    idx = indices.astype(int64)
    idx = _wick._where(idx < 0, idx + n, idx)
    return x.index_select(idx, axis)


def take_along_axis(x, indices, /, *, axis=-1):
    return x.gather(axis, indices.astype(int64))
