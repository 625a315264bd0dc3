"""The Array API's linalg extension (wick.linalg). Products, norms and traces are Wick ops; the
decompositions (and what is built on them: det, inv, solve, pinv, rank) compute on the host with
NumPy (see _host.py), since Wick's core has no LAPACK."""
import builtins
import math

from . import _host
from ._complex import ComplexDType


def _xp():
    from . import _array_api
    return _array_api


def _float_check(name, x):
    xp = _xp()
    if not xp.isdtype(x.dtype, ("real floating", "complex floating")):
        raise TypeError(f"linalg.{name}: takes a floating-point array, not {x.dtype!r}")


def _on_host(name, fn, *arrays):
    for a in arrays:
        _float_check(name, a)
    out = fn(*[_host.to_numpy(a) for a in arrays])
    dev = arrays[0].device
    xp = _xp()
    dt = xp.result_type(*arrays)
    if isinstance(out, tuple):
        return tuple(_host.from_numpy(o, _result_dtype(o, dt), dev) for o in out)
    return _host.from_numpy(out, _result_dtype(out, dt), dev)


def _result_dtype(o, dt):
    """Real results (eigenvalues, singular values, norms) of a complex input are its real dtype."""
    if isinstance(dt, ComplexDType) and not _host.numpy().iscomplexobj(o):
        return dt.real
    return dt


def cholesky(x, /, *, upper=False):
    np = _host.numpy()
    def f(a):
        L = np.linalg.cholesky(a)
        return np.conj(np.swapaxes(L, -1, -2)) if upper else L
    return _on_host("cholesky", f, x)


def cross(x1, x2, /, *, axis=-1):
    np = _host.numpy()
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("linalg.cross: the axis must have extent 3")
    d = _xp().result_type(x1, x2)
    out = np.cross(_host.to_numpy(x1), _host.to_numpy(x2), axis=axis)
    return _host.from_numpy(out, d, x1.device)


def det(x, /):
    np = _host.numpy()
    return _on_host("det", lambda a: np.asarray(np.linalg.det(a)), x)


def diagonal(x, /, *, offset=0):
    np = _host.numpy()
    a = _host.to_numpy(x)
    return _host.from_numpy(np.diagonal(a, offset, -2, -1).copy(), x.dtype, x.device)


def eigh(x, /):
    np = _host.numpy()
    r = _on_host("eigh", lambda a: tuple(np.linalg.eigh(a)), x)
    return _EighResult(*r)


def eigvalsh(x, /):
    np = _host.numpy()
    return _on_host("eigvalsh", np.linalg.eigvalsh, x)


def inv(x, /):
    np = _host.numpy()
    return _on_host("inv", np.linalg.inv, x)


def matmul(x1, x2, /):
    return _xp().matmul(x1, x2)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    np = _host.numpy()
    def f(a):
        r = np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=keepdims)
        return np.asarray(r)
    return _on_host("matrix_norm", f, x)


def matrix_power(x, n, /):
    xp = _xp()
    if n < 0:
        return matrix_power(inv(x), -n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError("linalg.matrix_power: takes square matrices")
    eye = xp.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    out = xp.broadcast_to(eye, x.shape) * 1 if n == 0 else None
    base = x
    while n:
        if n & 1:
            out = base if out is None else xp.matmul(out, base)
        n >>= 1
        if n:
            base = xp.matmul(base, base)
    return out


def matrix_rank(x, /, *, rtol=None):
    np = _host.numpy()
    _float_check("matrix_rank", x)
    a = _host.to_numpy(x)
    s = np.linalg.svd(a, compute_uv=False)
    if rtol is None:
        tol = s.max(axis=-1, keepdims=True, initial=0) * builtins.max(a.shape[-2:]) * np.finfo(s.dtype).eps
    else:
        r = _host.to_numpy(rtol) if hasattr(rtol, "shape") else rtol
        tol = s.max(axis=-1, keepdims=True, initial=0) * np.asarray(r)[..., None]
    return _host.from_numpy(np.count_nonzero(s > tol, axis=-1).astype(np.int64), None, x.device)


def matrix_transpose(x, /):
    return _xp().matrix_transpose(x)


def outer(x1, x2, /):
    xp = _xp()
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("linalg.outer: takes two 1-d arrays")
    return xp.multiply(xp.reshape(x1, (-1, 1)), xp.reshape(x2, (1, -1)))


def pinv(x, /, *, rtol=None):
    np = _host.numpy()
    def f(a):
        if rtol is None:
            rc = builtins.max(a.shape[-2:]) * np.finfo(a.dtype).eps
        else:
            rc = _host.to_numpy(rtol) if hasattr(rtol, "shape") else rtol
        return np.linalg.pinv(a, rcond=rc)
    return _on_host("pinv", f, x)


def qr(x, /, *, mode="reduced"):
    np = _host.numpy()
    return _QRResult(*_on_host("qr", lambda a: tuple(np.linalg.qr(a, mode=mode)), x))


def slogdet(x, /):
    np = _host.numpy()
    return _SlogdetResult(*_on_host("slogdet", lambda a: tuple(np.asarray(v) for v in np.linalg.slogdet(a)), x))


def solve(x1, x2, /):
    np = _host.numpy()
    def f(a, b):
        # NumPy reads b as a stack of vectors when b.ndim == a.ndim - 1; the standard reads only a
        # 1-d b so. Broadcasting the stacks first leaves NumPy no such choice.
        vector = b.ndim == 1
        if vector:
            b = b[:, None]
        stack = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, stack + a.shape[-2:])
        b = np.broadcast_to(b, stack + b.shape[-2:])
        out = np.linalg.solve(a, b)
        return out[..., 0] if vector else out
    xp = _xp()
    d = xp.result_type(x1, x2)
    return _on_host("solve", f, xp.astype(x1, d), xp.astype(x2, d))


def svd(x, /, *, full_matrices=True):
    np = _host.numpy()
    return _SVDResult(*_on_host("svd", lambda a: tuple(np.linalg.svd(a, full_matrices=full_matrices)), x))


def svdvals(x, /):
    np = _host.numpy()
    return _on_host("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), x)


def tensordot(x1, x2, /, *, axes=2):
    return _xp().tensordot(x1, x2, axes=axes)


def trace(x, /, *, offset=0, dtype=None):
    xp = _xp()
    return xp.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def vecdot(x1, x2, /, *, axis=-1):
    return _xp().vecdot(x1, x2, axis=axis)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    xp = _xp()
    _float_check("vector_norm", x)
    a = xp.abs(x)
    if ord == math.inf:
        return xp.max(a, axis=axis, keepdims=keepdims) if a.size else xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return xp.sum(xp.astype(a != 0, a.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keepdims))
    return xp.pow(xp.sum(xp.pow(a, float(ord)), axis=axis, keepdims=keepdims), 1.0 / ord)


from collections import namedtuple  # noqa: E402

_EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
_QRResult = namedtuple("QRResult", "Q R")
_SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
_SVDResult = namedtuple("SVDResult", "U S Vh")
