"""The Array API namespace (standard version 2023.12): what `import wick` exports as functions.

Every function is the real one of _dtypes/_creation/_elementwise/_functions behind one dispatch:
a call with a complex array, dtype or Python complex goes to _complex_ops/_complex_functions (the
split complex arrays of _complex.py), where a function the standard does not define for complex
is missing and the call is a TypeError."""
import functools
import types

from ._dtypes import *  # noqa: F401,F403
from ._dtypes import __array_namespace_info__  # noqa: F401
from ._creation import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._functions import *  # noqa: F401,F403

from . import _creation, _dtypes, _elementwise, _functions, _complex_ops, _complex_functions
from ._complex import wants_complex

# Functions that take complex dtypes themselves (the dtype rules) rather than through dispatch.
_dtype_aware = {"result_type", "can_cast", "isdtype", "finfo", "iinfo"}
_helpers = {"builtins", "math", "namedtuple", "Array", "DType", "ComplexDType", "complex_of"}


def _dispatch(name, real_fn):
    complex_fn = getattr(_complex_ops, name, None) or getattr(_complex_functions, name, None)

    @functools.wraps(real_fn)
    def f(*args, **kwargs):
        if wants_complex(args, kwargs):
            if complex_fn is None:
                raise TypeError(f"{name}: not defined for complex arrays in the Array API")
            return complex_fn(*args, **kwargs)
        return real_fn(*args, **kwargs)
    return f


__all__ = sorted({n for m in (_dtypes, _creation, _elementwise, _functions)
                  for n in dir(m) if not n.startswith("_") and n not in _helpers}
                 | {"__array_namespace_info__"})

for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, types.FunctionType) and _name not in _dtype_aware and not _name.startswith("_"):
        globals()[_name] = _dispatch(_name, _obj)
del _name, _obj

from . import _linalg as linalg, _fft as fft  # noqa: E402 (the extensions use the wrapped functions)
__all__ += ["fft", "linalg"]


def _inspectable_methods(cls):
    """Python methods with the standard's signatures over the bound ones that inspect cannot read
    (the suite checks these signatures; nanobind's functions have none)."""
    getitem, setitem, bound_to_device = cls.__getitem__, cls.__setitem__, cls.to_device
    dlpack_device = cls.__dlpack_device__

    def __getitem__(self, key, /):
        return getitem(self, key)

    def __setitem__(self, key, value, /):
        setitem(self, key, value)

    def to_device(self, device, /, *, stream=None):
        return bound_to_device(self, device, stream=stream)

    def __dlpack_device__(self, /):
        return tuple(dlpack_device(self))

    for f in (__getitem__, __setitem__, to_device, __dlpack_device__):
        setattr(cls, f.__name__, f)


_inspectable_methods(_creation.Array)
