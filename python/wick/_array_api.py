"""The Array API namespace (standard version 2023.12): what `import wick` exports as functions."""
from ._dtypes import *  # noqa: F401,F403
from ._dtypes import __array_namespace_info__  # noqa: F401
from ._creation import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._functions import *  # noqa: F401,F403

from . import _creation, _dtypes, _elementwise, _functions

__all__ = sorted({n for m in (_dtypes, _creation, _elementwise, _functions)
                  for n in dir(m) if not n.startswith("_") and n not in ("builtins", "math", "namedtuple", "Array")}
                 | {"__array_namespace_info__"})
