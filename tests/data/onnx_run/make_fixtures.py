"""Fixtures of tests/test_onnx_run.cpp (wick run / wick inspect, external data, .npy files).

Run with a Python that has onnx 1.23.2 and numpy (e.g. build/onnx-venv/bin/python):
    python tests/data/onnx_run/make_fixtures.py
Expected outputs come from onnx's reference evaluator (onnx.reference), never from Wick.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def mlp_model():
    w1 = rng.standard_normal((64, 256)).astype(np.float32) * 0.1  # 64 KiB: a view into the file
    b1 = rng.standard_normal(256).astype(np.float32) * 0.1
    w2 = rng.standard_normal((256, 10)).astype(np.float32) * 0.1
    b2 = rng.standard_normal(10).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
        helper.make_node("Add", ["h3", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="wick-fixtures")


def save_mlp():
    model = mlp_model()
    x = rng.standard_normal((4, 64)).astype(np.float32)
    (y,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.save(os.path.join(HERE, "x.npy"), x)
    np.save(os.path.join(HERE, "y.npy"), y)
    onnx.save_model(model, os.path.join(HERE, "inline_mlp.onnx"))
    os.makedirs(os.path.join(HERE, "ext_mlp"), exist_ok=True)
    onnx.save_model(model, os.path.join(HERE, "ext_mlp", "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    return model


def external(name, dims, location, offset, length):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def save_hostile():
    """Models whose external data is outside the folder, past its file's end, or missing."""
    for folder, location, offset, length in (("ext_escape", "../weights.bin", 0, 16),
                                             ("ext_short", "weights.bin", 8, 16),
                                             ("ext_missing", "nope.bin", 0, 16)):
        d = os.path.join(HERE, folder)
        os.makedirs(d, exist_ok=True)
        w = external("w", [4], location, offset, length)
        graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], folder,
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [w])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        if folder == "ext_short":
            with open(os.path.join(d, "weights.bin"), "wb") as f:
                f.write(np.zeros(4, np.float32).tobytes())  # 16 bytes: [8, 24) runs past the end


def save_chain():
    """x -> 12 Adds -> y on a [256, 1024] f32 (1 MiB): the run holds 2-3 MiB at once, not 13."""
    c = numpy_helper.from_array(np.array(0.5, np.float32), "c")
    nodes, prev = [], "x"
    for i in range(12):
        out = "y" if i == 11 else f"t{i}"
        nodes.append(helper.make_node("Add", [prev, "c"], [out]))
        prev = out
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 1024])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 1024])], [c])
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                    os.path.join(HERE, "chain.onnx"))


def save_npy():
    """NumPy's own files: Fortran order, uint16, big-endian, format 2.0."""
    np.save(os.path.join(HERE, "fortran.npy"), np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
    np.save(os.path.join(HERE, "u2.npy"), np.array([1, 65535, 7], np.uint16))
    np.save(os.path.join(HERE, "big_endian.npy"), np.array([1.5, 2.5], ">f4"))
    with open(os.path.join(HERE, "v2.npy"), "wb") as f:
        np.lib.format.write_array(f, np.array([[True, False]]), version=(2, 0))


if __name__ == "__main__":
    assert onnx.__version__ == "1.23.2", onnx.__version__
    save_mlp()
    save_hostile()
    save_chain()
    save_npy()
