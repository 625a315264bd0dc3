#!/usr/bin/env python3
"""Writes the fixtures of tests/test_onnx_optimize.cpp: one folder per graph, laid out as the ONNX
node tests are (model.onnx, test_data_set_0/input_<i>.pb and output_<i>.pb). Each graph holds a
pattern the optimiser folds, removes or fuses (or a near miss it must leave alone); each expected
output is computed by onnx's reference implementation (onnx.reference.ReferenceEvaluator) on the
unoptimised graph, never by Wick. Made with onnx 1.23.2:

    /tmp/onnxv/bin/python tests/data/onnx_optimize/make_fixtures.py
"""
import math
import pathlib
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HERE = pathlib.Path(__file__).resolve().parent
RNG = np.random.default_rng(20261202)
F = TensorProto.FLOAT


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def scalar(name, v):
    return init(name, np.array(v, dtype=np.float32))


def save(name, opset, nodes, inputs, outputs, inits=()):
    """inputs {name: array}; outputs [names] (f32 unless the reference says otherwise)."""
    vi = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
          for k, v in inputs.items()]
    graph = helper.make_graph(nodes, name, vi, [helper.make_tensor_value_info(o, F, None) for o in outputs],
                              list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8

    results = ReferenceEvaluator(model).run(None, inputs)
    d = HERE / name
    shutil.rmtree(d, ignore_errors=True)
    (d / "test_data_set_0").mkdir(parents=True)
    onnx.save(model, d / "model.onnx")
    for i, (k, v) in enumerate(inputs.items()):
        (d / "test_data_set_0" / f"input_{i}.pb").write_bytes(numpy_helper.from_array(v, k).SerializeToString())
    for i, (k, v) in enumerate(zip(outputs, results)):
        (d / "test_data_set_0" / f"output_{i}.pb").write_bytes(
            numpy_helper.from_array(np.asarray(v), k).SerializeToString())
    print(name, len(nodes), "nodes")


N = helper.make_node


# --- Folding and dead nodes ---

def fold_chain():
    nodes = [N("Constant", [], ["c"], value=init("cv", np.array([1, 2, 3], np.float32))),
             N("Add", ["c", "a"], ["s"]), N("Mul", ["s", "two"], ["r"]), N("Add", ["x", "r"], ["y"])]
    save("fold_chain", 17, nodes, {"x": f32(2, 3)}, ["y"],
         [init("a", f32(3)), scalar("two", 2.0)])


def fold_shape():
    # Shape(x, start=1) of a static input folds on the host; the Reshape then has a constant shape.
    nodes = [N("Shape", ["x"], ["s"], start=1), N("Reshape", ["z", "s"], ["r"]), N("Add", ["r", "x"], ["y"])]
    save("fold_shape", 17, nodes, {"x": f32(2, 3, 4), "z": f32(12)}, ["y"])


def fold_limit():
    # A ConstantOfShape of 16900 elements from a 2-element shape stays a node (bigger than the
    # fold limit); the Constant before it folds.
    nodes = [N("Constant", [], ["shape"], value=init("sv", np.array([130, 130], np.int64))),
             N("ConstantOfShape", ["shape"], ["k"], value=init("v", np.array([1.5], np.float32))),
             N("Add", ["x", "k"], ["y"])]
    save("fold_limit", 17, nodes, {"x": f32(130, 130)}, ["y"])


def dead_nodes():
    # Exp -> Neg reaches no output (removed); Sigmoid is read only by the If's branch (kept).
    then_g = helper.make_graph([N("Identity", ["w"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, None)])
    else_g = helper.make_graph([N("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, None)])
    nodes = [N("Exp", ["x"], ["d1"]), N("Neg", ["d1"], ["d2"]), N("Sigmoid", ["x"], ["w"]),
             N("Relu", ["x"], ["y"]), N("If", ["cond"], ["z"], then_branch=then_g, else_branch=else_g)]
    save("dead_nodes", 17, nodes, {"x": f32(2, 3), "cond": np.array(True)}, ["y", "z"])


# --- LayerNorm as torch.onnx.export emits it below opset 17 ---

def layer_norm(name, opset, square="pow", divide="div", beta=True, axes2=(-1,), pow_exp=2.0,
               extra_output=None, eps=1e-5):
    def mean(src, dst, axes):
        if opset >= 18:
            return [N("ReduceMean", [src, dst + "_axes"], [dst])], [init(dst + "_axes", np.array(axes, np.int64))]
        return [N("ReduceMean", [src], [dst], axes=list(axes))], []
    nodes, inits = [], [init("gamma", f32(8)), scalar("eps", eps)]
    for n_, i_ in [mean("x", "mean", (-1,))]:
        nodes += n_; inits += i_
    nodes.append(N("Sub", ["x", "mean"], ["d"]))
    if square == "pow":
        nodes.append(N("Pow", ["d", "p2"], ["sq"])); inits.append(scalar("p2", pow_exp))
    else:
        nodes.append(N("Mul", ["d", "d"], ["sq"]))
    n_, i_ = mean("sq", "var", axes2); nodes += n_; inits += i_
    nodes += [N("Add", ["var", "eps"], ["ve"]), N("Sqrt", ["ve"], ["sd"])]
    if divide == "div":
        nodes.append(N("Div", ["d", "sd"], ["nrm"]))
    else:
        nodes += [N("Reciprocal", ["sd"], ["rs"]), N("Mul", ["d", "rs"], ["nrm"])]
    nodes.append(N("Mul", ["nrm", "gamma"], ["g"] if beta else ["y"]))
    if beta:
        nodes.append(N("Add", ["g", "beta"], ["y"])); inits.append(init("beta", f32(8)))
    outputs = ["y"] + ([extra_output] if extra_output else [])
    save(name, opset, nodes, {"x": f32(2, 4, 8)}, outputs, inits)


# --- RMSNorm ---

def rms_norm(name, opset=17, square="pow", divide="recip", eps=1e-6, weight_dims=(16,)):
    nodes = [N("Pow", ["x", "p2"], ["sq"]) if square == "pow" else N("Mul", ["x", "x"], ["sq"]),
             N("ReduceMean", ["sq"], ["ms"], axes=[-1]), N("Add", ["ms", "eps"], ["mse"]),
             N("Sqrt", ["mse"], ["rms"])]
    if divide == "recip":
        nodes += [N("Reciprocal", ["rms"], ["inv"]), N("Mul", ["x", "inv"], ["nrm"])]
    else:
        nodes.append(N("Div", ["x", "rms"], ["nrm"]))
    nodes.append(N("Mul", ["w", "nrm"], ["y"]))
    save(name, opset, nodes, {"x": f32(2, 3, 16)}, ["y"],
         [scalar("p2", 2.0), scalar("eps", eps), init("w", f32(*weight_dims))])


# --- GELU ---

def gelu_erf(name, form="a", c=math.sqrt(2.0), op="Div", half=0.5):
    nodes = [N(op, ["x", "c"], ["u"]), N("Erf", ["u"], ["e"]), N("Add", ["e", "one"], ["a"])]
    if form == "a":    # x * (1 + erf) * 0.5
        nodes += [N("Mul", ["x", "a"], ["m"]), N("Mul", ["m", "half"], ["y"])]
    elif form == "b":  # x * ((1 + erf) * 0.5)
        nodes += [N("Mul", ["a", "half"], ["m"]), N("Mul", ["x", "m"], ["y"])]
    else:              # (x * 0.5) * (1 + erf)
        nodes += [N("Mul", ["x", "half"], ["h"]), N("Mul", ["h", "a"], ["y"])]
    save(name, 17, nodes, {"x": f32(3, 5, 7)}, ["y"], [scalar("c", c), scalar("one", 1.0), scalar("half", half)])


def gelu_tanh(name, k=0.044715, cube="pow"):
    nodes = []
    if cube == "pow":
        nodes.append(N("Pow", ["x", "three"], ["x3"]))
    else:
        nodes += [N("Mul", ["x", "x"], ["xx"]), N("Mul", ["xx", "x"], ["x3"])]
    nodes += [N("Mul", ["x3", "k"], ["kx3"]), N("Add", ["x", "kx3"], ["inner"]), N("Mul", ["inner", "s2pi"], ["arg"]),
              N("Tanh", ["arg"], ["t"]), N("Add", ["t", "one"], ["a"]), N("Mul", ["x", "a"], ["m"]),
              N("Mul", ["m", "half"], ["y"])]
    save(name, 17, nodes, {"x": f32(3, 5, 7)}, ["y"],
         [scalar("three", 3.0), scalar("k", k), scalar("s2pi", math.sqrt(2.0 / math.pi)), scalar("one", 1.0),
          scalar("half", 0.5)])


# --- Attention: softmax(Q K^T * scale + mask) V ---

def attention(name, scale_op="Div", mask=True, softmax_axis=-1, perm=(0, 1, 3, 2)):
    d = 8
    nodes = [N("Transpose", ["k"], ["kt"], perm=list(perm)), N("MatMul", ["q", "kt"], ["qk"])]
    inits = [scalar("scale", math.sqrt(d) if scale_op == "Div" else 1.0 / math.sqrt(d))]
    nodes.append(N(scale_op, ["qk", "scale"], ["s"]))
    inputs = {"q": f32(2, 3, 4, d), "k": f32(2, 3, 6, d), "v": f32(2, 3, 6, 5)}
    src = "s"
    if mask:
        nodes.append(N("Add", ["s", "mask"], ["sm"])); src = "sm"
        inputs["mask"] = np.where(RNG.random((1, 1, 4, 6)) < 0.3, -1e4, 0).astype(np.float32)
    nodes += [N("Softmax", [src], ["p"], axis=softmax_axis), N("MatMul", ["p", "v"], ["y"])]
    save(name, 17, nodes, inputs, ["y"], inits)


# --- Conv followed by Relu: Wick's FusedConv ---

def conv_relu(name, x_shape, w_shape, bias=True, pinned_conv=False, **attrs):
    inits = [init("w", f32(*w_shape))]
    ins = ["x", "w"]
    if bias:
        inits.append(init("b", f32(w_shape[0])))
        ins.append("b")
    nodes = [N("Conv", ins, ["c"], **attrs), N("Relu", ["c"], ["y"])]
    save(name, 17, nodes, {"x": f32(*x_shape)}, ["y", "c"] if pinned_conv else ["y"], inits)


def main():
    fold_chain(); fold_shape(); fold_limit(); dead_nodes()
    layer_norm("layer_norm_pow_div", 13)
    layer_norm("layer_norm_mul_recip_opset18", 18, square="mul", divide="recip", beta=False)
    layer_norm("layer_norm_miss_axes", 13, axes2=(1,))
    layer_norm("layer_norm_miss_exponent", 13, pow_exp=4.0)  # d^4: a LayerNorm-like graph that is not one
    layer_norm("layer_norm_miss_consumer", 13, extra_output="var")
    rms_norm("rms_norm_recip")
    rms_norm("rms_norm_mul_div", square="mul", divide="div")
    rms_norm("rms_norm_miss_weight", weight_dims=(1,))
    gelu_erf("gelu_erf_a")
    gelu_erf("gelu_erf_b", form="b")
    gelu_erf("gelu_erf_c", form="c", c=1.0 / math.sqrt(2.0), op="Mul")
    gelu_erf("gelu_erf_miss_const", c=1.5)
    gelu_erf("gelu_erf_miss_half", half=0.4)
    gelu_tanh("gelu_tanh_pow")
    gelu_tanh("gelu_tanh_mul", cube="mul")
    gelu_tanh("gelu_tanh_miss_const", k=0.05)
    attention("attention_mask_div")
    attention("attention_mul_nomask", scale_op="Mul", mask=False)
    attention("attention_miss_axis", softmax_axis=2)
    conv_relu("conv_relu_bias", (2, 3, 9, 9), (8, 3, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2])
    conv_relu("conv_relu_groups_nobias", (1, 4, 7, 7), (6, 2, 3, 3), bias=False, group=2, dilations=[2, 1],
              pads=[1, 0, 2, 1])
    conv_relu("conv_relu_miss_consumer", (1, 3, 6, 6), (4, 3, 3, 3), pinned_conv=True)


if __name__ == "__main__":
    main()
