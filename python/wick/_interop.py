"""NumPy's view of a Wick array: __array__ through DLPack (zero-copy for host memory)."""


def _array(self, dtype=None, copy=None):
    import numpy as np
    from ._wick import DType
    if self.dtype == DType.bool:
        # NumPy before 2.0 takes no bool through DLPack: read the bytes as uint8, view as bool.
        out = np.from_dlpack(self.astype(DType.uint8)).view(np.bool_)
    elif self.dtype in (DType.bfloat16,):
        out = np.asarray(self.astype(DType.float32).tolist(), dtype=np.float32)
    else:
        out = np.from_dlpack(self)
    if dtype is not None:
        out = out.astype(dtype, copy=False)
    if copy:
        out = out.copy()
    return out


def install(array_type):
    array_type.__array__ = _array
