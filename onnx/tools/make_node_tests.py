#!/usr/bin/env python3
"""Writes ONNX's node tests, as the pinned onnx wheel collects them, as node-test folders:

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_N/input_K.pb, output_K.pb   (TensorProto, SequenceProto, OptionalProto)
    OUT/<case>/tolerance.json                            (the case's own rtol/atol, see below)

It is onnx's own `backend-test-tools generate-data` for the node kind, written against the graph's
declared types so that every value is written or the run fails: a value it cannot write (a type it
does not know, a dtype that differs from the declared one) stops it with a non-zero exit naming the
case, never a folder with a file missing. tolerance.json holds the bound onnx's runner
(onnx.backend.test.runner, Runner.assert_similar_outputs) compares that case's outputs with: the
TestCase's rtol and atol, and the rtol it uses for bfloat16 outputs, max(rtol, 2**-6) ("two
bfloat16 ULPs"); the generator checks that the installed runner still says so.

    python3 -m venv build/onnx-venv && build/onnx-venv/bin/pip install onnx==1.23.2
    build/onnx-venv/bin/python onnx/tools/make_node_tests.py build/onnx-node-1.23.2

(scripts/setup.sh does this once; the ctest conformance_onnx_node_tests runs the suite on it.)
"""
import json
import os
import shutil
import sys

PINNED = "1.23.2"


class CaseError(Exception):
    pass


def tensor_proto(value, elem_type, name, where):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        t = onnx.TensorProto()
        t.CopyFrom(value)
    elif isinstance(value, (np.ndarray, np.generic)):
        t = numpy_helper.from_array(np.asarray(value))
    else:
        raise CaseError(f"{where}: a {type(value).__name__} where the graph declares a tensor")
    if elem_type and t.data_type != elem_type:
        raise CaseError(
            f"{where}: a tensor of {onnx.TensorProto.DataType.Name(t.data_type)} where the graph "
            f"declares {onnx.TensorProto.DataType.Name(elem_type)}"
        )
    if name:
        t.name = name
    return t


def sequence_proto(value, elem, name, where):
    import onnx

    if not isinstance(value, (list, tuple)):
        raise CaseError(f"{where}: a {type(value).__name__} where the graph declares a sequence")
    s = onnx.SequenceProto()
    if name:
        s.name = name
    kind = elem.WhichOneof("value")
    if kind == "tensor_type":
        s.elem_type = onnx.SequenceProto.TENSOR
        for i, v in enumerate(value):
            s.tensor_values.append(tensor_proto(v, elem.tensor_type.elem_type, "", f"{where}[{i}]"))
    elif kind == "sequence_type":
        s.elem_type = onnx.SequenceProto.SEQUENCE
        for i, v in enumerate(value):
            s.sequence_values.append(sequence_proto(v, elem.sequence_type.elem_type, "", f"{where}[{i}]"))
    else:
        raise CaseError(f"{where}: a sequence of {kind}, which this writer does not write")
    return s


def optional_proto(value, elem, name, where):
    import onnx

    o = onnx.OptionalProto()
    if name:
        o.name = name
    kind = elem.WhichOneof("value")
    if value is None:  # an empty optional: UNDEFINED, as onnx's numpy_helper.from_optional writes it
        o.elem_type = onnx.OptionalProto.UNDEFINED
    elif kind == "tensor_type":
        o.elem_type = onnx.OptionalProto.TENSOR
        o.tensor_value.CopyFrom(tensor_proto(value, elem.tensor_type.elem_type, "", where))
    elif kind == "sequence_type":
        o.elem_type = onnx.OptionalProto.SEQUENCE
        o.sequence_value.CopyFrom(sequence_proto(value, elem.sequence_type.elem_type, "", where))
    else:
        raise CaseError(f"{where}: an optional of {kind}, which this writer does not write")
    return o


def value_proto(value, type_proto, name, where):
    """The proto of `value` as `type_proto` (the graph's declared type) says it is."""
    from onnx import numpy_helper

    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        if value is None:
            raise CaseError(f"{where}: None where the graph declares a tensor")
        return tensor_proto(value, type_proto.tensor_type.elem_type, name, where)
    if kind == "sequence_type":
        return sequence_proto(value, type_proto.sequence_type.elem_type, name, where)
    if kind == "optional_type":
        return optional_proto(value, type_proto.optional_type.elem_type, name, where)
    if kind == "map_type":
        return numpy_helper.from_dict(value, name)
    raise CaseError(f"{where}: the graph declares a {kind}, which this writer does not write")


def write_values(values, infos, directory, prefix, case):
    if len(values) > len(infos):
        raise CaseError(f"{case}: {len(values)} {prefix}s for {len(infos)} graph {prefix}s")
    for k, v in enumerate(values):
        where = f"{case}: {prefix} {k} ('{infos[k].name}')"
        proto = value_proto(v, infos[k].type, infos[k].name, where)
        with open(os.path.join(directory, f"{prefix}_{k}.pb"), "wb") as f:
            f.write(proto.SerializeToString())


def bfloat16_rtol(rtol):
    """onnx's runner compares bfloat16 outputs at max(rtol, 2**-6): checked in its source."""
    import inspect

    from onnx.backend.test.runner import Runner

    if "output_rtol = max(rtol, 2**-6)" not in inspect.getsource(Runner.assert_similar_outputs):
        raise CaseError("onnx's Runner.assert_similar_outputs no longer widens bfloat16 to max(rtol, 2**-6)")
    return max(rtol, 2**-6)


def write_case(case, out):
    folder = os.path.join(out, case.name)
    if os.path.exists(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    if case.model is None or not case.data_sets:
        raise CaseError(f"{case.name}: no model or no data set")
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_set = os.path.join(folder, f"test_data_set_{i}")
        os.makedirs(data_set)
        write_values(inputs, graph.input, data_set, "input", case.name)
        write_values(outputs, graph.output, data_set, "output", case.name)
        if len(outputs) != len(graph.output):
            raise CaseError(f"{case.name}: {len(outputs)} outputs for {len(graph.output)} graph outputs")
    with open(os.path.join(folder, "tolerance.json"), "w") as f:
        own = {"rtol": float(case.rtol), "atol": float(case.atol), "bfloat16_rtol": bfloat16_rtol(float(case.rtol))}
        json.dump(own, f, sort_keys=True)
        f.write("\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTPUT_DIR")
    import warnings

    import onnx
    from onnx.backend.test.case import node

    # The cases compute their expected infinities as 1/0 and log(0) on purpose.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    if onnx.__version__ != PINNED:
        sys.exit(f"make_node_tests.py: onnx {onnx.__version__} is installed, the pinned version is {PINNED} "
                 f"(pip install onnx=={PINNED})")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = [c for c in node.collect_testcases(None) if c.kind == "node"]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        sys.exit("make_node_tests.py: the collector returned duplicate case names")
    for case in cases:
        try:
            write_case(case, out)
        except CaseError as e:
            sys.exit(f"make_node_tests.py: {e}")
        except Exception as e:  # noqa: BLE001 - any failure names its case and stops the run
            sys.exit(f"make_node_tests.py: {case.name}: {type(e).__name__}: {e}")
    with open(os.path.join(out, "ONNX_VERSION"), "w") as f:
        f.write(f"{onnx.__version__} {len(cases)} node tests\n")
    print(f"{len(cases)} node tests of onnx {onnx.__version__} in {out}")


if __name__ == "__main__":
    main()
