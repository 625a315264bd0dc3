"""The Array API's data types, their promotion, and the inspection namespace."""
import builtins
import math
from collections import namedtuple

from . import _wick
from ._wick import DType
from ._complex import ComplexArray, ComplexDType, complex64, complex128, complex_of

bool = DType.bool  # noqa: A001 (the Array API names the dtype so)
int8, int16, int32, int64 = DType.int8, DType.int16, DType.int32, DType.int64
uint8, uint32, uint64 = DType.uint8, DType.uint32, DType.uint64
float16, bfloat16 = DType.float16, DType.bfloat16
float32, float64 = DType.float32, DType.float64

_signed = (int8, int16, int32, int64)
_unsigned = (uint8, uint32, uint64)
_ints = _signed + _unsigned
_floats = (float16, bfloat16, float32, float64)
_array_api_floats = (float32, float64)
_complex = (complex64, complex128)
_bits = {complex64: 64, complex128: 128, bool: 8, int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8, uint32: 32, uint64: 64,
         float16: 16, bfloat16: 16, float32: 32, float64: 64}

default_float = float32
default_int = int64
default_uint = uint64


def _check_dtype(d, what="dtype"):
    if not isinstance(d, (DType, ComplexDType)):
        raise TypeError(f"{what}: expected a wick dtype (wick.float32, ...), not {d!r}")
    return d


def _kind(d):
    if d == bool:
        return "b"
    if d in _signed:
        return "i"
    if d in _unsigned:
        return "u"
    return "c" if isinstance(d, ComplexDType) else "f"


def _promote(a, b):
    """The Array API's promotion of two dtypes; TypeError where the standard defines none
    (mixed kinds: bool with numbers, integers with floats; uint64 with signed integers)."""
    if a == b:
        return a
    ka, kb = _kind(a), _kind(b)
    if ka == "b" or kb == "b":
        raise TypeError(f"no promotion between {a!r} and {b!r} in the Array API (bool with a number)")
    if "c" in (ka, kb):
        if {ka, kb} - {"c", "f"}:
            raise TypeError(f"no promotion between {a!r} and {b!r} in the Array API (complex with an integer)")
        ra, rb = (d.real if isinstance(d, ComplexDType) else d for d in (a, b))
        return complex_of(_wick._promote_types(ra, rb))
    if (ka == "f") != (kb == "f"):
        raise TypeError(f"no promotion between {a!r} and {b!r} in the Array API (mixed kinds)")
    if {a, b} & {uint64} and {ka, kb} == {"i", "u"}:
        raise TypeError(f"no promotion between {a!r} and {b!r} in the Array API (uint64 with a signed integer)")
    return _wick._promote_types(a, b)


def result_type(*arrays_and_dtypes):
    """The dtype of an op's result over these arrays, dtypes and Python scalars."""
    dtypes, scalars = [], []
    for x in arrays_and_dtypes:
        if isinstance(x, DType):
            dtypes.append(x)
        elif isinstance(x, (_wick.Array, ComplexArray, ComplexDType)):
            dtypes.append(x if isinstance(x, ComplexDType) else x.dtype)
        elif isinstance(x, (builtins.bool, int, float, complex)):
            scalars.append(x)
        else:
            raise TypeError(f"result_type: expected arrays, dtypes or Python scalars, not {type(x).__name__}")
    if not dtypes:
        raise ValueError("result_type: at least one array or dtype is needed")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote(out, d)
    for s in scalars:
        out = _scalar_result(s, out)
    return out


def _scalar_result(s, d):
    """The dtype of an op on an array of dtype d and the Python scalar s."""
    k = _kind(d)
    if k == "c":
        if isinstance(s, builtins.bool):
            raise TypeError(f"a Python bool with a {d!r} array")
        return d
    if isinstance(s, complex):
        if k != "f":
            raise TypeError(f"a Python complex with a {d!r} array")
        return complex_of(d)
    return _wick._scalar_dtype(s, d)


def astype(x, dtype, /, *, copy=True, device=None):
    """x converted to dtype (a copy unless copy=False and x has dtype already), on device."""
    _check_dtype(dtype, "astype")
    if x.dtype == dtype and not copy:
        out = x
    else:
        out = x.astype(dtype)
        if out is x or x.dtype == dtype:
            out = x.clone()
    return out.to_device(device) if device is not None else out


def can_cast(from_, to, /):
    """Whether from_ promotes to `to` without a change of kind (the Array API's lattice)."""
    f = from_.dtype if isinstance(from_, (_wick.Array, ComplexArray)) else _check_dtype(from_, "can_cast")
    _check_dtype(to, "can_cast")
    if f == to:
        return True
    try:
        return _promote(f, to) == to
    except TypeError:
        return False


def isdtype(dtype, kind):
    """Whether dtype is of kind: a dtype, a kind name or a tuple of them."""
    _check_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, (DType, ComplexDType)):
        return dtype == kind
    table = {
        "bool": (bool,),
        "signed integer": _signed,
        "unsigned integer": _unsigned,
        "integral": _ints,
        "real floating": _floats,
        "complex floating": _complex,
        "numeric": _ints + _floats + _complex,
    }
    if kind not in table:
        raise ValueError(f"isdtype: unknown kind {kind!r} (one of {', '.join(table)})")
    return dtype in table[kind]


finfo_object = namedtuple("finfo_object", "bits eps max min smallest_normal dtype")
iinfo_object = namedtuple("iinfo_object", "bits max min dtype")

_finfo = {
    float32: (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126),
    float64: (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022),
    float16: (16, 2.0 ** -10, 65504.0, 2.0 ** -14),
    bfloat16: (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126),
}


def _dtype_of(type_):
    return type_.dtype if isinstance(type_, (_wick.Array, ComplexArray)) else _check_dtype(type_)


def finfo(type, /):  # noqa: A002
    d = _dtype_of(type)
    d = d.real if isinstance(d, ComplexDType) else d
    if d not in _finfo:
        raise TypeError(f"finfo: {d!r} is not a floating-point dtype")
    bits, eps, mx, tiny = _finfo[d]
    return finfo_object(bits, eps, mx, -mx, tiny, d)


def iinfo(type, /):  # noqa: A002
    d = _dtype_of(type)
    if d not in _ints:
        raise TypeError(f"iinfo: {d!r} is not an integer dtype")
    bits = _bits[d]
    if d in _unsigned:
        return iinfo_object(bits, 2 ** bits - 1, 0, d)
    return iinfo_object(bits, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), d)


class _Info:
    """What __array_namespace_info__() returns: the namespace's capabilities, devices and dtypes."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return _wick.default_device()

    def devices(self):
        return _wick.devices()

    def default_dtypes(self, *, device=None):
        return {"real floating": default_float, "complex floating": complex_of(default_float), "integral": default_int,
                "indexing": int64}

    def dtypes(self, *, device=None, kind=None):
        names = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
                 "uint8": uint8, "uint32": uint32, "uint64": uint64, "float32": float32,
                 "float64": float64, "complex64": complex64, "complex128": complex128}
        if kind is None:
            return names
        return {n: d for n, d in names.items() if isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
