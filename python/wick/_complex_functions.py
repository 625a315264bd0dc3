"""The Array API's manipulation, statistical, searching, set, linear algebra and indexing functions
on complex arrays: shape functions apply the real function to both parts; the rest are formulas on
the real ops (see _complex_ops.py for the elementwise ones)."""
from . import _creation, _wick, _functions as _rf
from ._complex import ComplexArray, ComplexDType, as_complex
from ._complex_ops import _c, _mul, _one, _two, astype, conj, multiply, ones
from ._dtypes import _check_dtype, result_type


def _both(fn):
    """A function of one array whose result's parts are fn of the argument's parts."""
    def f(x, /, *args, **kwargs):
        x = _one(x)
        return _c(fn(x.re, *args, **kwargs), fn(x.im, *args, **kwargs))
    f.__name__ = fn.__name__
    return f


reshape = _both(_rf.reshape)
permute_dims = _both(_rf.permute_dims)
matrix_transpose = _both(_rf.matrix_transpose)
broadcast_to = _both(_rf.broadcast_to)
flip = _both(_rf.flip)
roll = _both(_rf.roll)
squeeze = _both(_rf.squeeze)
expand_dims = _both(_rf.expand_dims)
moveaxis = _both(_rf.moveaxis)
repeat = _both(_rf.repeat)
tile = _both(_rf.tile)
take = _both(_rf.take)
take_along_axis = _both(_rf.take_along_axis)
tril = _both(_creation.tril)
triu = _both(_creation.triu)


def unstack(x, /, *, axis=0):
    x = _one(x)
    return tuple(_c(r, i) for r, i in zip(_rf.unstack(x.re, axis=axis), _rf.unstack(x.im, axis=axis)))


def _common(arrays):
    arrays = list(arrays)
    d = result_type(*arrays)
    if not isinstance(d, ComplexDType):
        raise TypeError("expected complex arrays")
    return [as_complex(a, d) for a in arrays]


def concat(arrays, /, *, axis=0):
    arrays = _common(arrays)
    return _c(_rf.concat([a.re for a in arrays], axis=axis), _rf.concat([a.im for a in arrays], axis=axis))


def stack(arrays, /, *, axis=0):
    arrays = _common(arrays)
    return _c(_rf.stack([a.re for a in arrays], axis=axis), _rf.stack([a.im for a in arrays], axis=axis))


def broadcast_arrays(*arrays):
    shape = ()
    for a in arrays:
        shape = _rf._broadcast(shape, a.shape)
    return [broadcast_to(a, shape) if isinstance(a, ComplexArray) else a.broadcast_to(list(shape))
            for a in arrays]


# ---- statistics ------------------------------------------------------------------------------------

def _cast(x, dtype):
    return _one(x) if dtype is None else astype(_one(x), _check_dtype(dtype))


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    x = _cast(x, dtype)
    return _c(_rf.sum(x.re, axis=axis, keepdims=keepdims), _rf.sum(x.im, axis=axis, keepdims=keepdims))


def mean(x, /, *, axis=None, keepdims=False):
    x = _one(x)
    return _c(_rf.mean(x.re, axis=axis, keepdims=keepdims), _rf.mean(x.im, axis=axis, keepdims=keepdims))


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    x = _cast(x, dtype)
    axes = _rf._axes(x.re, axis)
    keep = [a for a in range(x.ndim) if a not in axes]
    kept_shape = [x.shape[a] for a in keep]
    n = 1
    for a in axes:
        n *= x.shape[a]
    y = reshape(permute_dims(x, keep + axes), kept_shape + [n])
    out = ones(tuple(kept_shape), dtype=x.dtype, device=x.device)
    for i in range(n):
        out = _mul(out, y[(Ellipsis, i)])
    if keepdims:
        out = reshape(out, [1 if a in axes else x.shape[a] for a in range(x.ndim)])
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    x = _cast(x, dtype)
    kw = {"axis": axis, "include_initial": include_initial}
    return _c(_rf.cumulative_sum(x.re, **kw), _rf.cumulative_sum(x.im, **kw))


def _nonzero_mask(x):
    x = _one(x)
    return (x.re != 0) | (x.im != 0)


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _rf.all(_nonzero_mask(x), axis=axis, keepdims=keepdims)


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _rf.any(_nonzero_mask(x), axis=axis, keepdims=keepdims)


def nonzero(x, /):
    return _rf.nonzero(_nonzero_mask(x))


def where(condition, x1, x2, /):
    a, b = _two(x1, x2)
    return _c(_wick._where(condition, a.re, b.re), _wick._where(condition, a.im, b.im))


# ---- linear algebra --------------------------------------------------------------------------------

def matmul(x1, x2, /):
    a, b = _two(x1, x2)
    return _c(a.re @ b.re - a.im @ b.im, a.re @ b.im + a.im @ b.re)


def vecdot(x1, x2, /, *, axis=-1):
    a, b = _two(x1, x2)
    n1, n2 = a.shape[axis] if a.ndim else None, b.shape[axis] if b.ndim else None
    if n1 != n2:
        raise ValueError(f"vecdot: the axis {axis} has extents {n1} and {n2}")
    return sum(multiply(conj(a), b), axis=axis)


def tensordot(x1, x2, /, *, axes=2):
    a, b = _two(x1, x2)
    t = lambda p, q: _rf.tensordot(p, q, axes=axes)  # noqa: E731
    return _c(t(a.re, b.re) - t(a.im, b.im), t(a.re, b.im) + t(a.im, b.re))


# ---- sets ------------------------------------------------------------------------------------------

def _unique(x):
    x = _one(x)
    vals = [complex(v) for v in _rf.reshape(x.re, (-1,)).tolist()]
    ims = _rf.reshape(x.im, (-1,)).tolist()
    vals = [complex(r.real, i) for r, i in zip(vals, ims)]
    index, distinct, first, counts, inverse = {}, [], [], [], []
    for i, v in enumerate(vals):
        key = v if v == v else ("nan", i)  # every NaN is distinct
        if key not in index:
            index[key] = len(distinct)
            distinct.append(v)
            first.append(i)
            counts.append(0)
        inverse.append(index[key])
        counts[index[key]] += 1
    dev = x.device
    i64 = _wick.DType.int64
    mk = lambda data: _wick.asarray(data, dtype=i64, device=dev) if data else _wick.zeros((0,), dtype=i64, device=dev)  # noqa: E731
    values = ComplexArray(_wick.asarray([v.real for v in distinct], dtype=x.re.dtype, device=dev),
                          _wick.asarray([v.imag for v in distinct], dtype=x.re.dtype, device=dev))
    inv = mk(inverse).reshape(list(x.shape)) if inverse else _wick.zeros(x.shape, dtype=i64, device=dev)
    return values, mk(first), inv, mk(counts)


def unique_values(x, /):
    return _unique(x)[0]


def unique_counts(x, /):
    v, _, _, c = _unique(x)
    return _rf._UniqueCounts(v, c)


def unique_inverse(x, /):
    v, _, inv, _ = _unique(x)
    return _rf._UniqueInverse(v, inv)


def unique_all(x, /):
    return _rf._UniqueAll(*_unique(x))


def meshgrid(*arrays, indexing="xy"):
    from ._creation import meshgrid as real_meshgrid
    arrays = _common(arrays)
    re = real_meshgrid(*[a.re for a in arrays], indexing=indexing)
    im = real_meshgrid(*[a.im for a in arrays], indexing=indexing)
    return [_c(r, i) for r, i in zip(re, im)]
