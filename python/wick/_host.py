"""Round trips through NumPy on the host, for what Wick's core does not compute (matrix
decompositions, FFTs): the Array API's linalg and fft extensions are correct everywhere this way,
though not fast, and need NumPy (an ImportError names it where it is missing)."""
from . import _wick
from ._complex import ComplexArray, ComplexDType, complex64, complex128

_np_names = {"bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
             "uint8": "uint8", "uint32": "uint32", "uint64": "uint64", "float32": "float32",
             "float64": "float64", "float16": "float16"}


def numpy():
    try:
        import numpy as np
    except ImportError as e:
        raise ImportError("wick.linalg's decompositions and wick.fft compute on the host with NumPy: pip install numpy") from e
    return np


def to_numpy(x):
    np = numpy()
    if isinstance(x, ComplexArray):
        out = to_numpy(x.re).astype(np.float64) + 1j * to_numpy(x.im).astype(np.float64)
        return out.astype(np.complex64 if x.dtype == complex64 else np.complex128)
    return np.asarray(x.tolist(), dtype=_np_names.get(x.dtype.name, "float32")).reshape(x.shape)


def wick_dtype_of(a):
    """The wick dtype for a NumPy array's dtype (complex ones are ComplexDTypes)."""
    np = numpy()
    if a.dtype == np.complex64:
        return complex64
    if a.dtype == np.complex128:
        return complex128
    return getattr(_wick.DType, str(a.dtype))


def from_numpy(a, dtype=None, device=None):
    np = numpy()
    a = np.asarray(a)
    dtype = wick_dtype_of(a) if dtype is None else dtype
    shape = list(a.shape)
    if isinstance(dtype, ComplexDType):
        re = _wick.asarray(a.real.reshape(-1).tolist(), dtype=dtype.real, device=device).reshape(shape)
        im = _wick.asarray(a.imag.reshape(-1).tolist(), dtype=dtype.real, device=device).reshape(shape)
        return ComplexArray(re, im)
    return _wick.asarray(a.reshape(-1).tolist(), dtype=dtype, device=device).reshape(shape)
