"""ONNX models run on a Wick device (wick::onnx from Python).

    m = wick.onnx.load("mlp.onnx")
    print(m.inputs)                                   # [ValueInfo('x', f32 [-1, 784])]
    out = m.run({"x": numpy_array})                   # {"y": wick.Array}

Inputs are a dict of name -> array (an Array, a NumPy array or nested lists; what is not an Array
becomes one of the input's declared dtype on the model's device), or a list in input order.
Outputs are a dict of output name -> Array. A run releases the GIL.
"""
from ._wick import onnx as _onnx

Model = _onnx.Model
ValueInfo = _onnx.ValueInfo

__all__ = ["load", "Model", "ValueInfo"]


def load(path, device=None, optimize=True):
    """Reads the ONNX model at ``path`` for ``device`` (None: the default device); ``optimize``:
    run Wick's graph optimiser once (folding, fusion). Ops without a lowering raise at load."""
    return Model(str(path), device, optimize)
