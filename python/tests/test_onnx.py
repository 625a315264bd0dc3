"""wick.onnx from Python against `wick run` on the same model and inputs (tests/data/onnx)."""
import os
import subprocess

import numpy as np
import pytest

import wick

BUILD = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(wick._wick.__file__))))
SOURCE = os.environ.get("WICK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.path.join(BUILD, "bin", "wick")
MLP = os.path.join(SOURCE, "tests", "data", "onnx", "model_mlp", "model.onnx")


def concrete(shape, batch):
    return tuple(batch if d is None else d for d in shape)


@pytest.mark.skipif(not os.access(CLI, os.X_OK), reason="no wick CLI at " + CLI)
def test_run_matches_the_cli(tmp_path):
    m = wick.onnx.load(MLP)
    assert len(m.inputs) == 1 and m.inputs[0].kind == "tensor" and m.opset > 0
    inp = m.inputs[0]
    x = np.random.default_rng(0).standard_normal(concrete(inp.shape, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    p = subprocess.run([CLI, "run", MLP, "--input", "%s=%s" % (inp.name, tmp_path / "x.npy"), "--output",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    got = m.run({inp.name: x})  # a NumPy array in
    assert list(got) == [o.name for o in m.outputs]
    for name, value in got.items():
        assert isinstance(value, wick.Array)
        np.testing.assert_allclose(np.asarray(value), np.load(tmp_path / "out" / (name + ".npy")), rtol=1e-6)
    # The same by position, from an Array, and from nested lists.
    first = m.outputs[0].name
    np.testing.assert_array_equal(np.asarray(m.run([wick.asarray(x)])[first]), np.asarray(got[first]))
    np.testing.assert_array_equal(np.asarray(m.run({inp.name: x.tolist()})[first]), np.asarray(got[first]))


def test_run_errors_name_the_input():
    m = wick.onnx.load(MLP)
    with pytest.raises(KeyError, match=m.inputs[0].name):
        m.run({"nope": np.zeros((1,), np.float32)})
    with pytest.raises(ValueError, match="inputs"):
        m.run([np.zeros((1,), np.float32), np.zeros((1,), np.float32)])
    with pytest.raises(RuntimeError):
        wick.onnx.load(os.path.join(SOURCE, "no-such-model.onnx"))
