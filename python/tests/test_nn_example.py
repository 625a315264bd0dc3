"""examples/python/train_mnist_mlp.py runs: a few short epochs of Fashion-MNIST, whose training
loss must fall epoch after epoch (and the test accuracy rise well above chance)."""
import os
import re
import subprocess
import sys

import pytest

import wick

SOURCE = os.environ.get("WICK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(SOURCE, "examples", "python", "train_mnist_mlp.py")


def have_fashion_mnist():
    try:
        wick.data.find_fashion_mnist()
        return True
    except Exception:  # noqa: BLE001 (not installed: a wick error listing the paths tried)
        return False


@pytest.mark.skipif(not have_fashion_mnist(), reason="Fashion-MNIST not installed (dataset-fashion-mnist)")
def test_mlp_example_loss_decreases(tmp_path):
    package = os.path.dirname(os.path.dirname(os.path.abspath(wick.__file__)))
    env = dict(os.environ, PYTHONPATH=package)
    weights = str(tmp_path / "mlp.safetensors")
    p = subprocess.run([sys.executable, EXAMPLE, "--epochs", "3", "--limit", "1280", "--test-limit", "1000",
                        "--save", weights], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    epochs = re.findall(r"epoch (\d): train loss ([\d.]+), test accuracy ([\d.]+)", p.stdout)
    assert [int(e[0]) for e in epochs] == [1, 2, 3], p.stdout
    losses = [float(e[1]) for e in epochs]
    assert losses[0] > losses[1] > losses[2], p.stdout
    assert losses[0] < 2.5 and float(epochs[-1][2]) > 0.5, p.stdout  # ln(10) = 2.30 at the start
    assert sorted(wick.nn.load_safetensors(weights)) == ["0.bias", "0.weight", "2.bias", "2.weight", "4.bias",
                                                         "4.weight"]
