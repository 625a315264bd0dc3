"""Complex arrays for the Array API namespace: the core has no complex dtypes, so complex64 and
complex128 are "split complex" here, two real arrays (float32 or float64) holding the real and
imaginary parts, with the same shape and device. The namespace's functions reach the formulas in
_complex_ops.py through one dispatch (_array_api.py); this module has the dtype objects, the array
object and the conversions of operands into it."""
import builtins

from . import _wick
from ._wick import Array, DType


class ComplexDType:
    """complex64 / complex128: compared by identity, hashable, named like the real dtypes."""
    __slots__ = ("name", "real")

    def __init__(self, name, real):
        self.name, self.real = name, real

    def __repr__(self):
        return f"wick.{self.name}"

    def __reduce__(self):
        return self.name

    @property
    def itemsize(self):
        return 8 if self.name == "complex64" else 16


complex64 = ComplexDType("complex64", DType.float32)
complex128 = ComplexDType("complex128", DType.float64)
_by_real = {DType.float32: complex64, DType.float64: complex128}


def complex_of(real_dtype):
    """The complex dtype whose components are real_dtype (float16/bfloat16 widen to complex64)."""
    return _by_real.get(real_dtype, complex128 if real_dtype == DType.float64 else complex64)


def _scalar_parts(v):
    c = complex(v)
    return c.real, c.imag


def _nested_parts(obj):
    """Splits a nested sequence of numbers into two nested lists: real and imaginary parts."""
    if isinstance(obj, (list, tuple)):
        parts = [_nested_parts(o) for o in obj]
        return [p[0] for p in parts], [p[1] for p in parts]
    return _scalar_parts(obj)


class ComplexArray:
    """An Array API array of dtype complex64 or complex128: its parts are wick Arrays `re`, `im`."""
    __slots__ = ("re", "im")
    __hash__ = None

    def __init__(self, re, im):
        self.re, self.im = re, im

    # ---- attributes --------------------------------------------------------------------------------
    @property
    def dtype(self):
        return _by_real[self.re.dtype]

    @property
    def shape(self):
        return self.re.shape

    @property
    def ndim(self):
        return self.re.ndim

    @property
    def size(self):
        return self.re.size

    @property
    def device(self):
        return self.re.device

    @property
    def real(self):
        return self.re

    @property
    def imag(self):
        return self.im

    @property
    def T(self):  # noqa: N802 (the standard's name)
        return ComplexArray(self.re.T, self.im.T)

    @property
    def mT(self):  # noqa: N802
        return ComplexArray(self.re.mT, self.im.mT)

    def to_device(self, device, /, *, stream=None):
        return ComplexArray(self.re.to_device(device, stream=stream), self.im.to_device(device, stream=stream))

    def __array_namespace__(self, /, *, api_version=None):
        return self.re.__array_namespace__(api_version=api_version)

    def astype(self, dtype):
        from . import _complex_ops
        return _complex_ops.astype(self, dtype)

    def clone(self):
        return ComplexArray(self.re.clone(), self.im.clone())

    # ---- conversions -------------------------------------------------------------------------------
    def item(self):
        return complex(self.re.item(), self.im.item())

    def tolist(self):
        def join(r, i):
            return [join(a, b) for a, b in zip(r, i)] if isinstance(r, list) else complex(r, i)
        return join(self.re.tolist(), self.im.tolist())

    def __complex__(self):
        return self.item()

    def __bool__(self):
        return builtins.bool(self.item())

    def __float__(self):
        raise TypeError("float() of a complex array: take real() or abs() first")

    def __int__(self):
        raise TypeError("int() of a complex array: take real() first")

    def __index__(self):
        raise TypeError("a complex array is not an index")

    def __len__(self):
        return len(self.re)

    def __repr__(self):
        values = repr(self.tolist()) if self.size <= 1000 else f"<{self.size} elements>"
        return f"Array({values}, dtype={self.dtype.name}, device={self.device})"

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        # DLPack's complex elements are interleaved, which two real arrays are not: export an
        # interleaved host copy (through NumPy, whose capsule is the unversioned kind).
        try:
            from ._host import to_numpy
            return to_numpy(self).__dlpack__()
        except ImportError as e:
            raise BufferError("exporting a Wick complex array through DLPack needs NumPy") from e

    def __dlpack_device__(self, /):
        return (1, 0)  # __dlpack__ exports a host copy

    # ---- indexing ----------------------------------------------------------------------------------
    def __getitem__(self, key):
        return ComplexArray(self.re[key], self.im[key])

    def __setitem__(self, key, value):
        v = as_complex(value, self.dtype, self.device)
        self.re[key] = v.re
        self.im[key] = v.im


def _function(name):
    from . import _complex_ops, _complex_functions
    return getattr(_complex_ops, name, None) or getattr(_complex_functions, name)


def _operator(name, reflected=False):
    def op(self, other):
        if not is_operand(other):
            return NotImplemented
        fn = _function(name)
        return fn(other, self) if reflected else fn(self, other)
    return op


def _in_place(name):
    def op(self, other):
        if not is_operand(other):
            return NotImplemented
        r = _function(name)(self, other)
        if r.dtype != self.dtype:
            raise TypeError(f"in-place operator: the result's dtype {r.dtype!r} differs from the array's {self.dtype!r}")
        if r.shape != self.shape:
            raise ValueError(f"in-place operator: the result's shape {r.shape} differs from the array's {self.shape}")
        self.re.copy_(r.re)
        self.im.copy_(r.im)
        return self
    return op


for _op, _fn in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "divide"),
                 ("pow", "pow"), ("matmul", "matmul")]:
    setattr(ComplexArray, f"__{_op}__", _operator(_fn))
    setattr(ComplexArray, f"__r{_op}__", _operator(_fn, reflected=True))
    setattr(ComplexArray, f"__i{_op}__", _in_place(_fn))
ComplexArray.__eq__ = _operator("equal")
ComplexArray.__ne__ = _operator("not_equal")
ComplexArray.__neg__ = lambda self: ComplexArray(-self.re, -self.im)
ComplexArray.__pos__ = lambda self: ComplexArray(self.re.clone(), self.im.clone())
ComplexArray.__abs__ = lambda self: _function("abs")(self)


def is_operand(v):
    return isinstance(v, (ComplexArray, Array, builtins.bool, int, float, complex))


def from_parts(re, im, dtype):
    rd = dtype.real
    return ComplexArray(re.astype(rd) if re.dtype != rd else re, im.astype(rd) if im.dtype != rd else im)


def as_complex(v, dtype, device=None):
    """v (a complex or real array, a Python scalar) as a ComplexArray of dtype; real arrays of an
    integer or bool dtype are refused (the standard promotes no integer with a complex dtype)."""
    if isinstance(v, ComplexArray):
        return v if v.dtype == dtype else from_parts(v.re, v.im, dtype)
    if isinstance(v, Array):
        if v.dtype not in (DType.float16, DType.bfloat16, DType.float32, DType.float64):
            raise TypeError(f"no promotion between {v.dtype!r} and {dtype!r} in the Array API")
        re = v.astype(dtype.real)
        return ComplexArray(re, _wick._full(v.shape, 0.0, dtype.real, v.device))
    if isinstance(v, (builtins.bool, int, float, complex)):
        r, i = _scalar_parts(v)
        return ComplexArray(_wick._full((), r, dtype.real, device), _wick._full((), i, dtype.real, device))
    raise TypeError(f"expected an array or a Python scalar, not {type(v).__name__}")


def parts_of(obj, dtype, device):
    """asarray's complex path for nested sequences and scalars."""
    re, im = _nested_parts(obj)
    return ComplexArray(_wick.asarray(re, dtype=dtype.real, device=device),
                        _wick.asarray(im, dtype=dtype.real, device=device))


def wants_complex(args, kwargs):
    """Whether a namespace call takes a complex array, a complex dtype or a complex scalar."""
    for a in args:
        if _complex_value(a, 2):
            return True
    for a in kwargs.values():
        if _complex_value(a, 2):
            return True
    return False


def _complex_value(a, depth):
    if isinstance(a, (ComplexArray, ComplexDType, complex)):
        return True
    if isinstance(a, (list, tuple)):
        if depth == 0:
            return _nested_complex(a)
        return builtins.any(_complex_value(e, depth - 1) for e in a)
    return False


def _nested_complex(a):
    for e in a:
        if isinstance(e, (list, tuple)):
            if _nested_complex(e):
                return True
        elif isinstance(e, (ComplexArray, complex)):
            return True
    return False
