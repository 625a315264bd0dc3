"""The package's basics: import, devices, arrays made and read back, hand-worked values."""
import math

import pytest

import wick


def test_devices_and_default_device():
    devs = wick.devices()
    assert devs, "no usable device"
    names = [d.name for d in devs]
    assert "cpu-onednn:0" in names
    assert wick.default_device() in devs
    assert wick.Device("cpu").plugin == "cpu-onednn"
    with pytest.raises(ValueError, match="no-such-device"):
        wick.Device("no-such-device")


def test_plugins_are_found_beside_libwick():
    import os
    search = dict(wick.plugin_search_path())
    here = os.path.dirname(os.path.abspath(wick._wick.__file__))
    install = [d for d, origin in search.items() if origin == "install directory"]
    assert install and install[0].endswith(os.path.join("lib", "wick", "plugins")), search
    assert os.path.isdir(install[0]) and os.path.commonpath([install[0], os.path.dirname(here)])


def test_plugins_report_states():
    states = {p.name: p.state for p in wick.plugins()}
    assert states["cpu-onednn"] == "usable"
    # The CUDA plugin loads and says why it is not usable on a machine without a GPU.
    if "cuda" in states and states["cuda"] != "usable":
        cuda = [p for p in wick.plugins() if p.name == "cuda"][0]
        assert cuda.reason


def test_asarray_values_and_dtypes():
    x = wick.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert x.dtype == wick.float32 and x.shape == (2, 2) and x.ndim == 2 and x.size == 4
    assert wick.asarray([1, 2]).dtype == wick.int64
    assert wick.asarray([True, False]).dtype == wick.bool
    assert (x @ x).tolist() == [[7.0, 10.0], [15.0, 22.0]]
    assert (x + 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert (2 ** wick.asarray([1.0, 3.0])).tolist() == [2.0, 8.0]
    assert wick.asarray(2**62 + 1, dtype=wick.int64).item() == 2**62 + 1  # exact, not through a double
    with pytest.raises(OverflowError):
        wick.asarray([1], dtype=wick.int8) + 300


def test_python_division_semantics():
    a = wick.asarray([7, -7, 7, -7])
    b = wick.asarray([2, 2, -2, -2])
    assert (a // b).tolist() == [7 // 2, -7 // 2, 7 // -2, -7 // -2]
    assert (a % b).tolist() == [7 % 2, -7 % 2, 7 % -2, -7 % -2]
    f = wick.asarray([7.5, -7.5])
    assert (f % 2.0).tolist() == [7.5 % 2.0, -7.5 % 2.0]
    assert (wick.asarray([1, 2]) / 2).tolist() == [0.5, 1.0]


def test_indexing_and_setitem():
    x = wick.reshape(wick.arange(12), (3, 4))
    assert x[1].tolist() == [4, 5, 6, 7]
    assert x[:, -1].tolist() == [3, 7, 11]
    assert x[::2, 1::2].tolist() == [[1, 3], [9, 11]]
    assert x[None, 0, ...].shape == (1, 4)
    assert x[x > 8].tolist() == [9, 10, 11]
    with pytest.raises(IndexError):
        x[3]
    x[0, :] = 0
    x[x > 9] = -1
    assert x.tolist() == [[0, 0, 0, 0], [4, 5, 6, 7], [8, 9, -1, -1]]


def test_reductions_and_statistics():
    x = wick.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert wick.sum(x).item() == 21.0
    assert wick.mean(x, axis=1).tolist() == [2.0, 5.0]
    assert wick.max(x, axis=0).tolist() == [4.0, 5.0, 6.0]
    assert math.isclose(wick.std(x).item(), math.sqrt(17.5 / 6), rel_tol=1e-6)
    assert wick.argmax(x).item() == 5
    assert wick.sum(wick.asarray([1, 2], dtype=wick.int32)).dtype == wick.int64


def test_errors_keep_the_core_message():
    a = wick.ones((2, 3))
    b = wick.ones((4, 5))
    with pytest.raises(ValueError, match=r"\[2, 3\]"):
        a + b


def test_asarray_of_a_read_only_numpy_array_copies_it():
    import numpy as np
    n = np.arange(4, dtype=np.float32)
    n.flags.writeable = False
    x = wick.asarray(n)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
