"""Wick from Python: arrays on any device a Wick plugin serves, as an Array API namespace.

    import wick
    wick.devices()                         # every usable device of every plugin found
    x = wick.asarray([[1.0, 2.0], [3.0, 4.0]], device="cpu")
    y = wick.exp(x) @ x.mT                 # the Array API standard (2023.12)
    n = numpy.from_dlpack(x)               # zero-copy exchange where memory is on the host

The package finds libwick, its plugins and their manifests beside itself (wick/lib in a wheel,
build/lib in a build tree); plugin discovery, the TOML config, WICK_* variables and strict mode
behave as in C++ (docs/config.md). docs/python.md has the whole story.
"""
from . import _wick
from ._wick import (  # noqa: F401
    Array, Device, DType, PluginInfo, devices, plugins, default_device, cpu_device,
    selection_reason, plugin_search_path, strict, set_strict, fallbacks, reset_fallbacks,
    manual_seed, rand, randn, configure, asarray, zeros, ones, empty, from_dlpack, newaxis,
)
from ._array_api import *  # noqa: F401,F403
from ._array_api import __all__ as _array_api_all
from ._interop import install as _install_interop

__array_api_version__ = "2023.12"
__version__ = "0.1.0"

_install_interop(Array)
del _install_interop

# Autograd, nn, optimizers, data, models and ONNX (python/src/nn.cpp, models.cpp).
from . import autograd, nn, optim, data, models, onnx  # noqa: E402,F401
from .autograd import no_grad  # noqa: E402,F401
