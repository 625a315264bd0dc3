"""NumPy's view of a Wick array: __array__ shares host memory (a writable NumPy array over the
tensor's own memory where its device gives an address), else a host copy."""


def _array(self, dtype=None, copy=None):
    import numpy as np
    from ._wick import DType
    out = None if copy else self._numpy_view()
    if out is None:
        # A copy: through the host (another device's memory first comes to the CPU).
        host = self if self.__dlpack_device__()[0] == 1 else self.to_device("cpu")
        if host.dtype == DType.bool:
            # NumPy before 2.0 takes no bool through DLPack: read the bytes as uint8, view as bool.
            out = np.from_dlpack(host.astype(DType.uint8)).view(np.bool_)
        elif host.dtype == DType.bfloat16:
            out = np.from_dlpack(host.astype(DType.float32))
        else:
            out = np.from_dlpack(host)
    if dtype is not None:
        out = out.astype(dtype, copy=False)
    if copy:
        out = out.copy()
    return out


def install(array_type):
    array_type.__array__ = _array
