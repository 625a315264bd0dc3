"""The Array API's creation functions."""
import builtins
import math

from . import _wick
from ._dtypes import _check_dtype, _floats, _ints, default_float, default_int, bool as _bool
from ._wick import Array


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    return _wick.asarray(obj, dtype=dtype, device=device, copy=copy)


def from_dlpack(x, /, *, device=None, copy=None):
    return _wick.from_dlpack(x, device=device, copy=copy)


def zeros(shape, *, dtype=None, device=None):
    return _wick.zeros(shape, dtype=dtype, device=device)


def ones(shape, *, dtype=None, device=None):
    return _wick.ones(shape, dtype=dtype, device=device)


def empty(shape, *, dtype=None, device=None):
    return _wick.empty(shape, dtype=dtype, device=device)


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _fill_dtype(value):
    if isinstance(value, builtins.bool):
        return _bool
    if isinstance(value, int):
        return default_int
    if isinstance(value, float):
        return default_float
    if isinstance(value, Array):
        return value.dtype
    raise TypeError(f"full: fill_value must be a bool, int or float, not {type(value).__name__}")


def full(shape, fill_value, *, dtype=None, device=None):
    if isinstance(fill_value, Array):
        fill_value = fill_value.item()
    dtype = _fill_dtype(fill_value) if dtype is None else _check_dtype(dtype)
    if isinstance(fill_value, float) and dtype not in _floats:
        if dtype == _bool:
            fill_value = builtins.bool(fill_value)
        else:
            raise TypeError(f"full: a float fill_value for an integer dtype {dtype!r}")
    return _wick._full(_shape(shape), fill_value, dtype, device)


def _like(x, dtype, device):
    return (x.dtype if dtype is None else dtype), (x.device if device is None else device)


def empty_like(x, /, *, dtype=None, device=None):
    d, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=d, device=dev)


def zeros_like(x, /, *, dtype=None, device=None):
    d, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=d, device=dev)


def ones_like(x, /, *, dtype=None, device=None):
    d, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=d, device=dev)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    d, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=d, device=dev)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if dtype is None:
        dtype = default_float if any(isinstance(v, float) for v in (start, stop, step)) else default_int
    n = builtins.max(0, math.ceil((stop - start) / step))
    if dtype in _ints and all(isinstance(v, int) for v in (start, stop, step)):
        # Exact integers: start + step * i, computed in int64.
        idx = _wick._iota((n,), 0, default_int, device)
        return (idx * step + start).astype(dtype) if n else zeros((0,), dtype=dtype, device=device)
    idx = _wick._iota((n,), 0, _wick.DType.float64, device)
    return (idx * float(step) + float(start)).astype(dtype)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    dtype = default_float if dtype is None else dtype
    if num < 0:
        raise ValueError("linspace: num must be >= 0")
    div = (num - 1) if endpoint else num
    idx = _wick._iota((num,), 0, _wick.DType.float64, device)
    if div > 0:
        out = idx * ((float(stop) - float(start)) / div) + float(start)
        if endpoint and num > 1:
            out[num - 1] = float(stop)
    else:
        out = idx * 0.0 + float(start)
    return out.astype(dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    n_cols = n_rows if n_cols is None else n_cols
    k = builtins.max(-n_rows - 1, builtins.min(k, n_cols + 1))  # past the edges: no diagonal (and an int64)
    rows = _wick._iota((n_rows, n_cols), 0, default_int, device)
    cols = _wick._iota((n_rows, n_cols), 1, default_int, device)
    return ((rows + k) == cols).astype(default_float if dtype is None else dtype)


def _triangle(x, k, lower):
    n, m = x.shape[-2], x.shape[-1]
    rows = _wick._iota((n, m), 0, default_int, x.device)
    cols = _wick._iota((n, m), 1, default_int, x.device)
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    return _wick._where(keep, x, _wick._full((), 0, x.dtype, x.device))


def tril(x, /, *, k=0):
    return _triangle(x, k, True)


def triu(x, /, *, k=0):
    return _triangle(x, k, False)


def meshgrid(*arrays, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', not {indexing!r}")
    shape = [a.size for a in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        view = [1] * len(arrays)
        axis = i
        if indexing == "xy" and len(arrays) >= 2 and i < 2:
            axis = 1 - i
        view[axis] = a.size
        out.append(a.reshape(view).broadcast_to(shape).clone())
    return out
