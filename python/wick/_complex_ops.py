"""The Array API namespace's functions on complex arrays (ComplexArray: real and imaginary parts as
two real wick Arrays), written as formulas on the real ops. _array_api.py sends a call here when it
has a complex array, dtype or scalar; a function missing here is not defined for complex."""
import builtins
import cmath
import math

from . import _wick, _elementwise as _re
from ._complex import ComplexArray, ComplexDType, as_complex, complex_of, from_parts, parts_of
from ._dtypes import _check_dtype, bool as _bool, default_float, result_type
from ._wick import Array

_W = _wick._where


def _c(re, im):
    return ComplexArray(re, im)


def _full(like, v):
    return _wick._full((), v, like.dtype, like.device)


def _one(x):
    """x as a ComplexArray (a real float array gets a zero imaginary part)."""
    if isinstance(x, ComplexArray):
        return x
    if isinstance(x, Array):
        return as_complex(x, complex_of(x.dtype))
    raise TypeError(f"expected a complex array, not {type(x).__name__}")


def _two(x1, x2):
    """Both operands as ComplexArrays of their promoted dtype (scalars take the array's dtype)."""
    arrays = [x for x in (x1, x2) if isinstance(x, (ComplexArray, Array))]
    if not arrays:
        raise TypeError("at least one operand must be an array")
    d = result_type(*[x1, x2])
    if not isinstance(d, ComplexDType):
        raise TypeError(f"no complex result for {x1!r} and {x2!r}")
    dev = arrays[0].device
    return as_complex(x1, d, dev), as_complex(x2, d, dev)


# ---- creation --------------------------------------------------------------------------------------

def _complex_dtype(dtype):
    if dtype is None:
        return complex_of(default_float)
    if not isinstance(dtype, ComplexDType):
        raise TypeError(f"a complex value for the real dtype {dtype!r}")
    return dtype


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    if isinstance(obj, (ComplexArray, Array)):
        src = obj if isinstance(obj, ComplexArray) else _one(obj)
        d = src.dtype if dtype is None else dtype
        if not isinstance(d, ComplexDType):
            return astype(src, d)
        out = as_complex(src, d)
        if device is not None:
            out = out.to_device(device)
        if copy is False and out is not obj:
            raise ValueError("asarray: copy=False, but the conversion needs a copy")
        return out.clone() if copy and out is src else out
    if copy is False:
        raise ValueError("asarray: copy=False, but a Python object must be copied")
    return parts_of(obj, _complex_dtype(dtype), device)


def from_dlpack(x, /, *, device=None, copy=None):
    if not isinstance(x, ComplexArray):
        raise TypeError("from_dlpack: Wick imports complex arrays only from its own")
    if copy is False and device is not None and device != x.device:
        raise ValueError("from_dlpack: copy=False, but the device differs")
    out = x.clone() if copy else x
    return out.to_device(device) if device is not None else out


def _filled(shape, value, dtype, device):
    d = _complex_dtype(dtype)
    r, i = complex(value).real, complex(value).imag
    return _c(_wick._full(shape, r, d.real, device), _wick._full(shape, i, d.real, device))


def zeros(shape, *, dtype=None, device=None):
    return _filled(shape, 0, dtype, device)


def ones(shape, *, dtype=None, device=None):
    return _filled(shape, 1, dtype, device)


def empty(shape, *, dtype=None, device=None):
    return _filled(shape, 0, dtype, device)


def full(shape, fill_value, *, dtype=None, device=None):
    if isinstance(fill_value, (Array, ComplexArray)):
        fill_value = complex(fill_value)
    if dtype is not None and not isinstance(dtype, ComplexDType):
        raise TypeError(f"full: a complex fill_value for the real dtype {dtype!r}")
    return _filled(shape, fill_value, dtype, device)


def _like(x, dtype, device):
    return (x.dtype if dtype is None else dtype), (x.device if device is None else device)


def zeros_like(x, /, *, dtype=None, device=None):
    d, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=d, device=dev) if isinstance(d, ComplexDType) else _wick.zeros(x.shape, dtype=d, device=dev)


def ones_like(x, /, *, dtype=None, device=None):
    d, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=d, device=dev) if isinstance(d, ComplexDType) else _wick.ones(x.shape, dtype=d, device=dev)


def empty_like(x, /, *, dtype=None, device=None):
    return zeros_like(x, dtype=dtype, device=device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    d, dev = _like(x, dtype, device)
    if not isinstance(d, ComplexDType):
        raise TypeError(f"full_like: a complex fill_value for the real dtype {d!r}")
    return full(x.shape, fill_value, dtype=d, device=dev)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    d = _complex_dtype(dtype)
    from ._creation import eye as real_eye
    re = real_eye(n_rows, n_cols, k=k, dtype=d.real, device=device)
    return _c(re, re * 0.0)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    from ._creation import linspace as real_linspace
    d = _complex_dtype(dtype)
    s, e = complex(start), complex(stop)
    return _c(real_linspace(s.real, e.real, num, dtype=d.real, device=device, endpoint=endpoint),
              real_linspace(s.imag, e.imag, num, dtype=d.real, device=device, endpoint=endpoint))


def astype(x, dtype, /, *, copy=True, device=None):
    _check_dtype(dtype, "astype")
    if isinstance(x, ComplexArray) and not isinstance(dtype, ComplexDType):
        if dtype == _bool:
            out = (x.re != 0) | (x.im != 0)
        else:
            raise TypeError(f"astype: a complex array does not cast to {dtype!r} (take real() or abs())")
    elif isinstance(x, Array):
        out = _c(x.astype(dtype.real), _wick._full(x.shape, 0.0, dtype.real, x.device))
    else:
        out = from_parts(x.re, x.im, dtype)
        if copy and out.re is x.re:
            out = out.clone()
    return out.to_device(device) if device is not None else out


# ---- arithmetic ------------------------------------------------------------------------------------

def add(x1, x2, /):
    a, b = _two(x1, x2)
    return _c(a.re + b.re, a.im + b.im)


def subtract(x1, x2, /):
    a, b = _two(x1, x2)
    return _c(a.re - b.re, a.im - b.im)


def _mul(a, b):
    return _c(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)


def multiply(x1, x2, /):
    return _mul(*_two(x1, x2))


def _div(a, b):
    # Smith's algorithm: scale by the larger of |c|, |d| so that c^2 + d^2 cannot overflow.
    c, d = b.re, b.im
    big = c.abs() >= d.abs()
    r = _W(big, d / c, c / d)
    den = _W(big, c + d * r, c * r + d)
    re = _W(big, a.re + a.im * r, a.re * r + a.im) / den
    im = _W(big, a.im - a.re * r, a.im * r - a.re) / den
    return _c(re, im)


def divide(x1, x2, /):
    return _div(*_two(x1, x2))


def reciprocal(x, /):
    x = _one(x)
    return _div(as_complex(1.0, x.dtype, x.device), x)


def pow(x1, x2, /):  # noqa: A001
    a, b = _two(x1, x2)
    r = exp(_mul(b, log(a)))
    zero_exp = (b.re == 0) & (b.im == 0)
    zero_base = (a.re == 0) & (a.im == 0) & (b.re > 0) & (b.im == 0)
    re = _W(zero_exp, _full(r.re, 1.0), _W(zero_base, _full(r.re, 0.0), r.re))
    im = _W(zero_exp | zero_base, _full(r.im, 0.0), r.im)
    return _c(re, im)


def negative(x, /):
    return -_one(x)


def positive(x, /):
    return +_one(x)


def square(x, /):
    x = _one(x)
    return _mul(x, x)


def conj(x, /):
    x = _one(x)
    return _c(x.re.clone(), -x.im)


def real(x, /):
    return _one(x).re.clone()


def imag(x, /):
    return _one(x).im.clone()


def abs(x, /):  # noqa: A001
    x = _one(x)
    return _re.hypot(x.re, x.im)


def sign(x, /):
    x = _one(x)
    m = abs(x)
    zero = m == 0
    safe = _W(zero, _full(m, 1.0), m)
    nan = isnan(x)
    nanv = _full(m, math.nan)
    re = _W(nan, nanv, _W(zero, _full(m, 0.0), x.re / safe))
    im = _W(nan, nanv, _W(zero, _full(m, 0.0), x.im / safe))
    inf = x.re.isinf() | x.im.isinf()
    return _c(_W(inf & ~nan, x.re.sign() * _W(x.im.isinf(), _full(m, 0.0), _full(m, 1.0)), re),
              _W(inf & ~nan, x.im.sign() * _W(x.re.isinf(), _full(m, 0.0), _full(m, 1.0)), im))


def round(x, /):  # noqa: A001
    x = _one(x)
    return _c(_re.round(x.re), _re.round(x.im))


def equal(x1, x2, /):
    a, b = _two(x1, x2)
    return (a.re == b.re) & (a.im == b.im)


def not_equal(x1, x2, /):
    return ~equal(x1, x2)


def isnan(x, /):
    x = _one(x)
    return x.re.isnan() | x.im.isnan()


def isinf(x, /):
    x = _one(x)
    return x.re.isinf() | x.im.isinf()


def isfinite(x, /):
    x = _one(x)
    return _re.isfinite(x.re) & _re.isfinite(x.im)


# ---- transcendental --------------------------------------------------------------------------------

def exp(x, /):
    x = _one(x)
    m = x.re.exp()
    # exp(+-inf + 0j) is (inf or 0) + 0j: keep the imaginary part 0 instead of inf * 0 = NaN.
    im = _W(x.im == 0, x.im, m * x.im.sin())
    return _c(m * x.im.cos(), im)


def expm1(x, /):
    x = _one(x)
    a, b = x.re, x.im
    h = (b * 0.5).sin()
    re = a.expm1() * b.cos() - h * h * 2.0
    im = _W(b == 0, b, a.exp() * b.sin())
    return _c(re, im)


def log(x, /):
    x = _one(x)
    return _c(abs(x).log(), x.im.atan2(x.re))


def log1p(x, /):
    return log(add(x, 1.0))


def log2(x, /):
    r = log(x)
    return _c(r.re * (1.0 / math.log(2.0)), r.im * (1.0 / math.log(2.0)))


def log10(x, /):
    r = log(x)
    return _c(r.re * (1.0 / math.log(10.0)), r.im * (1.0 / math.log(10.0)))


def sqrt(x, /):
    x = _one(x)
    a, b = x.re, x.im
    t = ((abs(x) + a.abs()) * 0.5).sqrt()
    zero = t == 0
    safe = _W(zero, _full(t, 1.0), t)
    q = _W(zero, _full(t, 0.0), b / (safe * 2.0))
    pos = a >= 0
    re = _W(pos, t, q.abs())
    im = _W(pos, q, _re.copysign(t, b))
    re = _W(b.isinf(), _full(t, math.inf), re)
    im = _W(b.isinf(), b, im)
    return _c(re, im)


def sin(x, /):
    x = _one(x)
    return _c(x.re.sin() * x.im.cosh(), _W(x.im == 0, x.im, x.re.cos() * x.im.sinh()))


def cos(x, /):
    x = _one(x)
    return _c(x.re.cos() * x.im.cosh(), -(x.re.sin() * x.im.sinh()))


def sinh(x, /):
    x = _one(x)
    return _c(_W(x.re == 0, x.re, x.re.sinh() * x.im.cos()), x.re.cosh() * x.im.sin())


def cosh(x, /):
    x = _one(x)
    return _c(x.re.cosh() * x.im.cos(), x.re.sinh() * x.im.sin())


def tanh(x, /):
    x = _one(x)
    a2, b2 = x.re * 2.0, x.im * 2.0
    den = a2.cosh() + b2.cos()
    re = a2.sinh() / den
    im = b2.sin() / den
    # Past |re| ~ 20 tanh is +-1 + 0j to double precision; the formula would divide inf by inf.
    big = x.re.abs() > 20.0
    return _c(_W(big, x.re.sign(), re), _W(big, _full(im, 0.0) * x.im.sign(), im))


def _times_i(x):
    return _c(-x.im, x.re)


def _times_minus_i(x):
    return _c(x.im, -x.re)


def tan(x, /):
    return _times_minus_i(tanh(_times_i(_one(x))))


def asinh(x, /):
    x = _one(x)
    # log(z + sqrt(z^2 + 1)) loses everything for re < 0: use asinh(-z) = -asinh(z). Past
    # |z| = 1e8 it is log(2z) to working precision, and z^2 would overflow float32 soon after.
    neg = x.re < 0
    z = _c(_W(neg, -x.re, x.re), _W(neg, -x.im, x.im))
    big = abs(z) > 1e8
    safe = _c(_W(big, _full(z.re, 0.0), z.re), _W(big, _full(z.im, 0.0), z.im))
    small = log(add(safe, sqrt(add(_mul(safe, safe), 1.0))))
    large = log(z)
    r = _c(_W(big, large.re + math.log(2.0), small.re), _W(big, large.im, small.im))
    return _c(_W(neg, -r.re, r.re), _W(neg, -r.im, r.im))


def asin(x, /):
    return _times_minus_i(asinh(_times_i(_one(x))))


def acos(x, /):
    r = asin(x)
    return _c(math.pi / 2 - r.re, -r.im)


def acosh(x, /):
    x = _one(x)
    r = log(add(x, _mul(sqrt(add(x, 1.0)), sqrt(subtract(x, 1.0)))))
    return r


def atanh(x, /):
    x = _one(x)
    # log(1 + z) - log(1 - z) rather than log((1 + z) / (1 - z)): the quotient rounds onto the
    # wrong side of the branch cut for large |z|.
    r = subtract(log(add(x, 1.0)), log(subtract(1.0, x)))
    return _c(r.re * 0.5, r.im * 0.5)


def atan(x, /):
    return _times_minus_i(atanh(_times_i(_one(x))))


# ---- special values --------------------------------------------------------------------------------
# The formulas above are right for finite nonzero parts; the standard's special cases (C99 Annex
# G: infinities, NaNs, signed zeros in either part) are many and branchy, so the elements with a
# non-finite or zero part are recomputed on the host by functions that follow Annex G: NumPy's
# where it is installed, else cmath's (which raises where C only flags the case: those elements
# keep the formulas' values).

_np_names = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
             "atan": "arctan", "atanh": "arctanh"}


def _host_function(name):
    """name's complex function on a list of Python complexes (None where it has no value)."""
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        # NumPy has no complex expm1; exp(z) - 1 has the same special values.
        fn = (lambda v: np.exp(v) - 1) if name == "expm1" else getattr(np, _np_names.get(name, name))

        def run(values):
            with np.errstate(all="ignore"):
                return [complex(c) for c in fn(np.array(values, dtype=np.complex128))]
        return run
    extra = {"expm1": lambda v: cmath.exp(v) - 1, "log1p": lambda v: cmath.log(1 + v),
             "log2": lambda v: cmath.log(v) / math.log(2.0)}
    fn = extra.get(name) or getattr(cmath, name)

    def run(values):
        out = []
        for v in values:
            try:
                out.append(fn(v))
            except (ValueError, OverflowError):
                out.append(None)
        return out
    return run


def _with_special_values(fn, name):
    def f(x, /):
        x = _one(x)
        r = fn(x)
        if x.size == 0:
            return r
        mask = ~isfinite(x) | (x.re == 0) | (x.im == 0)
        if not builtins.bool(mask.any(None, False)):
            return r
        flat = lambda a: a.reshape([-1]).tolist()  # noqa: E731
        where = [i for i, m in enumerate(flat(mask)) if m]
        xr, xi, rr, ri = flat(x.re), flat(x.im), flat(r.re), flat(r.im)
        values = _host_function(name)([complex(xr[i], xi[i]) for i in where])
        for i, v in zip(where, values):
            if v is None:
                continue
            if name == "tanh" and math.isinf(xr[i]) and math.isfinite(xi[i]):
                v = complex(math.copysign(1.0, xr[i]), 0.0)  # +-1 + 0j, where C gives 0 the sign of sin(2y)
            rr[i], ri[i] = v.real, v.imag
        shape = list(x.shape)
        mk = lambda vals: _wick.asarray(vals, dtype=x.re.dtype, device=x.device).reshape(shape)  # noqa: E731
        return _c(mk(rr), mk(ri))
    f.__name__ = fn.__name__
    f.__doc__ = fn.__doc__
    return f


for _name in ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1", "log",
              "log1p", "log2", "log10", "sin", "sinh", "sqrt", "tan", "tanh"]:
    globals()[_name] = _with_special_values(globals()[_name], _name)
del _name
