"""The Array API's fft extension (wick.fft): the transforms compute on the host with NumPy (see
_host.py; Wick's core has no FFT); the frequencies and shifts are Wick ops."""
from . import _host
from ._complex import ComplexDType, complex_of
from ._dtypes import default_float


def _xp():
    from . import _array_api
    return _array_api


def _complex_dtype(x):
    d = x.dtype
    if isinstance(d, ComplexDType):
        return d
    if not _xp().isdtype(d, "real floating"):
        raise TypeError(f"fft: takes a floating-point array, not {d!r}")
    return complex_of(d)


def _run(name, x, real_in, real_out, **kw):
    np = _host.numpy()
    if real_in and isinstance(x.dtype, ComplexDType):
        raise TypeError(f"fft.{name}: takes a real-valued array")
    cd = _complex_dtype(x)
    out = getattr(np.fft, name)(_host.to_numpy(x), **kw)
    return _host.from_numpy(out, cd.real if real_out else cd, x.device)


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    return _run("fft", x, False, False, n=n, axis=axis, norm=norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    return _run("ifft", x, False, False, n=n, axis=axis, norm=norm)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    return _run("fftn", x, False, False, s=s, axes=axes, norm=norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    return _run("ifftn", x, False, False, s=s, axes=axes, norm=norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _run("rfft", x, True, False, n=n, axis=axis, norm=norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _run("irfft", x, False, True, n=n, axis=axis, norm=norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _run("rfftn", x, True, False, s=s, axes=axes, norm=norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    return _run("irfftn", x, False, True, s=s, axes=axes, norm=norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _run("hfft", x, False, True, n=n, axis=axis, norm=norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    return _run("ihfft", x, True, False, n=n, axis=axis, norm=norm)


def _freq(values, d, dtype, device):
    xp = _xp()
    dtype = default_float if dtype is None else dtype
    if not values:
        return xp.zeros((0,), dtype=dtype, device=device)
    return xp.asarray([v / d for v in values], dtype=dtype, device=device)


# dtype= is the standard's 2025.12 addition, which the suite's tests already pass.
def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    half = (n - 1) // 2 + 1
    return _freq([i / n for i in list(range(half)) + list(range(-(n // 2), 0))], d, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _freq([i / n for i in range(n // 2 + 1)], d, dtype, device)


def _shift(x, axes, sign):
    xp = _xp()
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    shifts = [sign * (x.shape[a] // 2) for a in axes]
    return xp.roll(x, tuple(shifts), axis=tuple(axes)) if axes else x


def fftshift(x, /, *, axes=None):
    return _shift(x, axes, 1)


def ifftshift(x, /, *, axes=None):
    return _shift(x, axes, -1)
