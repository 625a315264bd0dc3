#!/usr/bin/env python3
"""Writes the ONNX fixtures of tests/test_onnx_refusals.cpp and tests/test_onnx_model.cpp: one folder per case, as the ONNX node
tests lay them out (model.onnx, test_data_set_0/input_<i>.pb and output_<i>.pb), each expected
output computed by onnx's reference implementation (onnx.reference.ReferenceEvaluator), never by
Wick. Run from anywhere with an onnx wheel (the fixtures were made with onnx 1.23.2):

    python3 -m venv /tmp/onnxv && /tmp/onnxv/bin/pip install onnx numpy
    /tmp/onnxv/bin/python tests/data/onnx/make_onnx_fixtures.py
"""
import pathlib
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = pathlib.Path(__file__).resolve().parent


def case(name, opset, node, inputs, out_types):
    """A one-node model of `node` at `opset`; inputs {name: array}; out_types {name: elem type}."""
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, t, None) for k, t in out_types.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    outputs = ReferenceEvaluator(model).run(None, inputs)
    d = HERE / name
    shutil.rmtree(d, ignore_errors=True)
    (d / "test_data_set_0").mkdir(parents=True)
    onnx.save(model, d / "model.onnx")
    for i, (k, v) in enumerate(inputs.items()):
        (d / "test_data_set_0" / f"input_{i}.pb").write_bytes(numpy_helper.from_array(v, k).SerializeToString())
    for i, (k, v) in enumerate(zip(out_types, outputs)):
        (d / "test_data_set_0" / f"output_{i}.pb").write_bytes(
            numpy_helper.from_array(np.asarray(v), k).SerializeToString())
    print(name, [np.asarray(v).tolist() for v in outputs])


def main():
    f32 = np.float32
    # Mod with fmod = 0 on floats (opset 28): Python's %, the divisor's sign (the ONNX test's values).
    case("mod_float_fmod_0", 28, helper.make_node("Mod", ["x", "y"], ["z"], fmod=0),
         {"x": np.array([-4.3, 7.2, 5.0, 4.3, -7.2, 8.0], f32), "y": np.array([2.1, -3.4, 8.0, -2.1, 3.4, 5.0], f32)},
         {"z": TensorProto.FLOAT})
    case("mod_float_fmod_1", 28, helper.make_node("Mod", ["x", "y"], ["z"], fmod=1),
         {"x": np.array([-4.3, 7.2, 5.0, 4.3, -7.2, 8.0], f32), "y": np.array([2.1, -3.4, 8.0, -2.1, 3.4, 5.0], f32)},
         {"z": TensorProto.FLOAT})
    x = np.arange(1 * 2 * 4 * 4, dtype=f32).reshape(1, 2, 4, 4)
    for mode in ("DCR", "CRD"):
        case(f"spacetodepth_{mode.lower()}", 28,
             helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode=mode), {"x": x}, {"y": TensorProto.FLOAT})
    # Resize's half_pixel_symmetric (opset 19): down to a length that rounds, and up.
    for label, shape, scales in (("down", (1, 1, 1, 4), [1, 1, 1, 0.6]), ("up", (1, 1, 2, 2), [1, 1, 2.3, 2.94])):
        case(f"resize_half_pixel_symmetric_{label}", 19,
             helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                              coordinate_transformation_mode="half_pixel_symmetric"),
             {"x": np.arange(1, np.prod(shape) + 1, dtype=f32).reshape(shape), "scales": np.array(scales, f32)},
             {"y": TensorProto.FLOAT})
    # ceil_mode: a last window that would start past the input is dropped.
    case("maxpool_ceil_reduce_by_one", 22,
         helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1),
         {"x": np.array([[[[1, 2], [3, 4]]]], f32)}, {"y": TensorProto.FLOAT})
    x = np.arange(1, 26, dtype=f32).reshape(1, 1, 5, 5)
    case("maxpool_ceil_pads", 22,
         helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
         {"x": x}, {"y": TensorProto.FLOAT})
    # AveragePool with ceil_mode: the divisor counts the model's pads (count_include_pad = 1) but
    # not the padding ceil_mode adds; without count_include_pad only the input's elements.
    x = np.arange(1, 17, dtype=f32).reshape(1, 1, 4, 4)
    for cip in (0, 1):
        case(f"averagepool_ceil_count_include_pad_{cip}", 22,
             helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                              ceil_mode=1, count_include_pad=cip),
             {"x": x}, {"y": TensorProto.FLOAT})
    # ConvInteger with one w_zero_point per output channel (W's first axis).
    case("convinteger_per_channel_w_zero_point", 10,
         helper.make_node("ConvInteger", ["x", "w", "x_zero_point", "w_zero_point"], ["y"], pads=[1, 1, 1, 1]),
         {"x": np.arange(2, 11, dtype=np.uint8).reshape(1, 1, 3, 3), "w": np.array([1, 2, 3, 4, 5, 6, 7, 8], np.uint8).reshape(2, 1, 2, 2),
          "x_zero_point": np.array(1, np.uint8), "w_zero_point": np.array([1, 3], np.uint8)},
         {"y": TensorProto.INT32})
    # MatMul of two vectors: a scalar.
    case("matmul_1d_1d", 13, helper.make_node("MatMul", ["a", "b"], ["c"]),
         {"a": np.array([1, 2, 3], f32), "b": np.array([4, 5, 6], f32)}, {"c": TensorProto.FLOAT})
    mlp()


def mlp():
    """A two-layer MLP with initializers and a symbolic batch extent: wick::onnx::Model's fixture."""
    rng = np.random.default_rng(25)
    w1, b1 = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    w2 = rng.standard_normal((4, 2)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
         helper.make_node("Relu", ["h1"], ["h"]), helper.make_node("MatMul", ["h", "w2"], ["z"]),
         helper.make_node("Softmax", ["z"], ["y"], axis=-1)],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = rng.standard_normal((5, 3)).astype(np.float32)
    (y,) = ReferenceEvaluator(model).run(None, {"x": x})
    d = HERE / "model_mlp"
    shutil.rmtree(d, ignore_errors=True)
    (d / "test_data_set_0").mkdir(parents=True)
    onnx.save(model, d / "model.onnx")
    (d / "test_data_set_0" / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    (d / "test_data_set_0" / "output_0.pb").write_bytes(numpy_helper.from_array(y, "y").SerializeToString())
    print("model_mlp", y.tolist())


if __name__ == "__main__":
    main()
