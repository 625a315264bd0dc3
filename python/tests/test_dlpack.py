"""Zero-copy exchange with NumPy and PyTorch (issue 27 item 3): DLPack both ways and __array__
share host memory (a write through one is read through the other), a copy across devices happens
only when asked, and the memory outlives the exporter."""
import gc

import numpy as np
import pytest
import torch

import wick


def test_numpy_views_wick_memory():
    x = wick.arange(6, dtype=wick.float32)
    n = np.from_dlpack(x)            # NumPy < 2 makes every DLPack import read-only
    x[3] = -1.0                      # Wick writes, NumPy reads
    assert n[3] == -1.0
    a = np.asarray(x)                # __array__: the same memory, writable
    a[2] = 42.0                      # NumPy writes, Wick reads
    assert x.tolist() == [0.0, 1.0, 42.0, -1.0, 4.0, 5.0]
    assert wick.sum(x).item() == 51.0
    # A strided Wick view (a transpose) is seen with its strides.
    m = wick.reshape(wick.arange(6, dtype=wick.int32), (2, 3)).T
    v = np.asarray(m)
    assert v.tolist() == [[0, 3], [1, 4], [2, 5]]
    v[2, 1] = 50
    assert m[2, 1].item() == 50
    # copy=True through __array__ is a snapshot.
    c = x.__array__(copy=True)
    c[0] = 123.0
    assert x[0].item() == 0.0


def test_numpy_view_outlives_the_array():
    x = wick.asarray([4, 5, 6], dtype=wick.int64)
    a = np.asarray(x)
    del x
    gc.collect()
    assert a.tolist() == [4, 5, 6]


def test_wick_views_numpy_memory():
    n = np.arange(6, dtype=np.float32)
    x = wick.from_dlpack(n)
    n[1] = 7.0
    assert x.tolist() == [0.0, 7.0, 2.0, 3.0, 4.0, 5.0]
    x[0] = 5.0
    assert n[0] == 5.0
    # A transposed (strided) NumPy view is viewed with its strides.
    m = np.arange(12, dtype=np.int64).reshape(3, 4).T
    y = wick.from_dlpack(m)
    assert y.shape == (4, 3) and y.tolist() == m.tolist()
    m[1, 2] = -5
    assert y[1, 2].item() == -5


def test_torch_both_ways():
    t = torch.arange(4, dtype=torch.float64)
    x = wick.from_dlpack(t)
    t[3] = 30.0
    assert x.tolist() == [0.0, 1.0, 2.0, 30.0]
    y = wick.asarray([[1, 2], [3, 4]], dtype=wick.int32)
    u = torch.from_dlpack(y)
    assert u.dtype == torch.int32 and u.tolist() == [[1, 2], [3, 4]]
    u[0, 1] = 20
    assert y.tolist() == [[1, 20], [3, 4]]
    y[1, 0] = 30
    assert u[1, 0].item() == 30


def test_exported_memory_outlives_the_array():
    x = wick.asarray([1.0, 2.0, 3.0])
    n = np.from_dlpack(x)
    del x
    gc.collect()
    assert n.tolist() == [1.0, 2.0, 3.0]


def test_copy_flags():
    n = np.arange(3, dtype=np.float32)
    x = wick.from_dlpack(n, copy=True)
    n[0] = 100.0
    assert x[0].item() == 0.0        # a copy: a snapshot
    x2 = wick.from_dlpack(n, copy=False)
    n[1] = 50.0
    assert x2[1].item() == 50.0


def test_other_devices_copy_only_when_asked():
    others = [d for d in wick.devices() if d.plugin == "opencl"]
    if not others:
        pytest.fail("no OpenCL device: PoCL's is expected on every CI machine")
    x = wick.asarray([1.0, 2.0], device=others[0])
    with pytest.raises(BufferError):
        np.from_dlpack(x)
    cap = x.__dlpack__(dl_device=(1, 0), copy=True)   # kDLCPU, asked: a host copy
    assert cap is not None
    y = wick.from_dlpack(x, device="cpu")             # Wick to Wick: moved, as asked
    assert y.device == wick.Device("cpu") and y.tolist() == [1.0, 2.0]
    assert wick.from_dlpack(x).device == x.device     # no device asked: stays
    assert np.asarray(x).tolist() == [1.0, 2.0]       # __array__: a host copy
