"""wick.nn, wick.optim's basics and wick.data: layers against PyTorch 1.13 with the same weights,
losses against PyTorch, safetensors files read back by an independent parser (json + NumPy), IDX
data against a gzip + NumPy decoding of the same files."""
import gzip
import json
import os
import struct

import numpy as np
import pytest

import wick
from wick import nn

torch = pytest.importorskip("torch")
F = torch.nn.functional
SOURCE = os.environ.get("WICK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def read_safetensors(path):
    """The tensors of a safetensors file, decoded with json and NumPy alone."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    kinds = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + b:8 + n + end], dtype=kinds[e["dtype"]]).reshape(e["shape"])
    return out, header.get("__metadata__", {})


def np_of(a):
    return np.asarray(a).copy()


def test_linear_matches_numpy_and_torch_init_bounds():
    store = nn.VarStore(seed=7)
    lin = nn.Linear(store.root() / "fc", 20, 5)
    assert store.names() == ["fc.weight", "fc.bias"] and lin.weight.shape == (5, 20)
    w, b = np_of(lin.weight), np_of(lin.bias)
    assert np.abs(w).max() <= 1 / np.sqrt(20) and np.abs(b).max() <= 1 / np.sqrt(20)  # PyTorch's bound
    x = np.random.default_rng(0).standard_normal((3, 20)).astype(np.float32)
    np.testing.assert_allclose(np_of(lin(wick.asarray(x))), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert nn.Linear(store.root() / "nobias", 4, 2, bias=False).bias is None
    # The same seed and names give the same numbers; another seed others.
    again = nn.VarStore(seed=7)
    assert np.array_equal(np_of(nn.Linear(again.root() / "fc", 20, 5).weight), w)
    other = nn.VarStore(seed=8)
    assert not np.array_equal(np_of(nn.Linear(other.root() / "fc", 20, 5).weight), w)


def test_conv_pool_norm_layers_match_torch():
    store = nn.VarStore(seed=1)
    root = store.root()
    conv = nn.Conv2d(root / "conv", 3, 4, 3, stride=2, padding=1)
    ln = nn.LayerNorm(root / "ln", 5)
    x = np.random.default_rng(2).standard_normal((2, 3, 9, 9)).astype(np.float32)
    tx = torch.from_numpy(x)
    tconv = F.conv2d(tx, torch.from_numpy(np_of(conv.weight)), torch.from_numpy(np_of(conv.bias)), stride=2, padding=1)
    np.testing.assert_allclose(np_of(conv(wick.asarray(x))), tconv.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np_of(nn.MaxPool2d(2)(wick.asarray(x))), F.max_pool2d(tx, 2).numpy())
    np.testing.assert_allclose(np_of(nn.AvgPool2d(3, stride=2, padding=1)(wick.asarray(x))),
                               F.avg_pool2d(tx, 3, stride=2, padding=1).numpy(), rtol=1e-5, atol=1e-6)
    y = x[:, 0, :5, :5]
    np.testing.assert_allclose(np_of(ln(wick.asarray(y))), F.layer_norm(torch.from_numpy(y), (5,)).numpy(),
                               rtol=1e-4, atol=1e-5)
    assert nn.Flatten()(wick.asarray(x)).shape == (2, 243)


def test_batchnorm_train_and_eval_match_torch():
    store = nn.VarStore(seed=1)
    bn = nn.BatchNorm2d(store.root() / "bn", 3)
    tbn = torch.nn.BatchNorm2d(3)
    x = np.random.default_rng(3).standard_normal((4, 3, 5, 5)).astype(np.float32)
    try:
        bn.train()
        assert bn.training
        np.testing.assert_allclose(np_of(bn(wick.asarray(x))), tbn(torch.from_numpy(x)).detach().numpy(),
                                   rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np_of(bn.running_var), tbn.running_var.numpy(), rtol=1e-5)
        bn.eval()
        tbn.eval()
        assert not nn.is_training()
        np.testing.assert_allclose(np_of(bn(wick.asarray(x))), tbn(torch.from_numpy(x)).detach().numpy(),
                                   rtol=1e-4, atol=1e-5)
        assert nn.Dropout(0.5)(wick.asarray(x)).tolist() == wick.asarray(x).tolist()  # identity in eval
    finally:
        nn.set_training(True)
    assert set(store.names()) == {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                                  "bn.num_batches_tracked"}
    assert len(store.parameters()) == 2  # the buffers are saved, not trained


def test_embedding_rows():
    store = nn.VarStore(seed=4)
    emb = nn.Embedding(store.root() / "emb", 10, 3)
    table = np_of(emb.weight)
    ids = np.array([[1, 9], [0, 1]])
    np.testing.assert_array_equal(np_of(emb(wick.asarray(ids))), table[ids])


def test_losses_match_torch():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    labels = rng.integers(0, 4, 6)
    target = rng.random((6, 4)).astype(np.float32)
    tl, tt = torch.from_numpy(logits), torch.from_numpy(target)
    wl, wt = wick.asarray(logits), wick.asarray(target)
    assert float(nn.cross_entropy(wl, wick.asarray(labels))) == pytest.approx(
        F.cross_entropy(tl, torch.from_numpy(labels)).item(), rel=1e-5)
    assert float(nn.CrossEntropyLoss()(wl, wick.asarray(labels))) == pytest.approx(
        F.cross_entropy(tl, torch.from_numpy(labels)).item(), rel=1e-5)
    assert float(nn.MSELoss()(wl, wt)) == pytest.approx(F.mse_loss(tl, tt).item(), rel=1e-5)
    assert float(nn.binary_cross_entropy_with_logits(wl, wt)) == pytest.approx(
        F.binary_cross_entropy_with_logits(tl, tt).item(), rel=1e-5)
    acc = (logits.argmax(1) == labels).mean()
    assert nn.accuracy(wl, wick.asarray(labels)) == pytest.approx(acc)
    for name, fn in [("relu", F.relu), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("gelu", lambda t: F.gelu(t, approximate="tanh")),
                     ("silu", F.silu)]:
        np.testing.assert_allclose(np_of(getattr(nn, name)(wl)), fn(tl).numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_varstore_save_load_roundtrip(tmp_path):
    store = nn.VarStore(seed=11)
    root = store.root()
    model = nn.Sequential(nn.Linear(root / "0", 4, 3), nn.ReLU(), nn.Linear(root / "2", 3, 2))
    path = str(tmp_path / "mlp.safetensors")
    store.save(path)
    tensors, meta = read_safetensors(path)
    assert meta == {"format": "pt"} and sorted(tensors) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    for name, value in tensors.items():
        np.testing.assert_array_equal(value, np_of(store[name]))
    # Into another model in place: its layers see the loaded values.
    other = nn.VarStore(seed=12)
    m2 = nn.Sequential(nn.Linear(other.root() / "0", 4, 3), nn.ReLU(), nn.Linear(other.root() / "2", 3, 2))
    x = wick.asarray(np.ones((1, 4), np.float32))
    assert m2(x).tolist() != model(x).tolist()
    other.load(path)
    assert m2(x).tolist() == model(x).tolist()
    with pytest.raises(Exception, match="0.weight"):
        _load_wrong_shape(path)
    # The plain functions: a dict of arrays to a file and back.
    nn.save_safetensors({"a": wick.asarray([1.0, 2.0]), "b": wick.arange(3)}, str(tmp_path / "d.safetensors"))
    back = nn.load_safetensors(str(tmp_path / "d.safetensors"))
    assert back["a"].tolist() == [1.0, 2.0] and back["b"].tolist() == [0, 1, 2]
    assert read_safetensors(str(tmp_path / "d.safetensors"))[0]["b"].tolist() == [0, 1, 2]


def _load_wrong_shape(path):
    s = nn.VarStore()
    nn.Linear(s.root() / "0", 5, 3)
    nn.Linear(s.root() / "2", 3, 2)
    s.load(path)


def test_sequential_collects_parameters():
    store = nn.VarStore(seed=0)
    root = store.root()
    model = nn.Sequential(nn.Conv2d(root / "0", 1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(root / "4", 2 * 3 * 3, 5))
    assert len(model) == 5 and isinstance(model[1], nn.ReLU)
    assert len(model.parameters()) == 4 and store.num_parameters() == 2 * 9 + 2 + 18 * 5 + 5
    assert model(wick.zeros((1, 1, 8, 8))).shape == (1, 5)


def _idx(path):
    with open(path, "rb") as f:
        raw = gzip.decompress(f.read())
    rank = raw[3]
    dims = struct.unpack(">" + "I" * rank, raw[4:4 + 4 * rank])
    return np.frombuffer(raw[4 + 4 * rank:], dtype=np.uint8).reshape(dims)


def test_data_batches_match_the_idx_files():
    d = os.path.join(SOURCE, "tests", "data", "idx")
    images, labels = _idx(os.path.join(d, "images_10.idx3.gz")), _idx(os.path.join(d, "labels_10.idx1.gz"))
    assert wick.data.read_idx(os.path.join(d, "labels_10.idx1.gz")).tolist() == labels.tolist()
    ds = wick.data.Dataset.from_idx(os.path.join(d, "images_10.idx3.gz"), os.path.join(d, "labels_10.idx1.gz"))
    assert len(ds) == 10 and ds.num_batches(4) == 3
    got = list(wick.data.batches(ds, batch_size=4, image_shape=(6,)))
    assert [b[1].tolist() for b in got] == [labels[:4].tolist(), labels[4:8].tolist(), labels[8:].tolist()]
    np.testing.assert_allclose(np_of(got[0][0]), images[:4].reshape(4, 6) / 255.0, rtol=1e-6)
    shuffled = [int(v) for _, lab in wick.data.batches(ds, batch_size=5, shuffle_seed=3) for v in lab.tolist()]
    assert sorted(shuffled) == sorted(labels.tolist()) and shuffled != labels.tolist()


def test_module_subclass_gathers_parameters_like_torch():
    class Net(nn.Module):
        def __init__(self, root):
            self.fc1 = nn.Linear(root / "fc1", 3, 4)
            self.blocks = [nn.Linear(root / "b0", 4, 4, bias=False), nn.ReLU()]
            self.scale = root.var("scale", (4,), init="ones")
            self.fc2 = self.fc1  # shared: counted once

        def forward(self, x):
            h = self.fc1(x)
            for b in self.blocks:
                h = b(h)
            return h * self.scale

    store = nn.VarStore(seed=0)
    net = Net(store.root())
    params = net.parameters()
    assert len(params) == 4 and len(store.parameters()) == 4
    assert [tuple(p.shape) for p in params] == [(4, 3), (4,), (4, 4), (4,)]
    x = wick.asarray(np.ones((2, 3), np.float32))
    wick.sum(net(x)).backward()
    assert all(p.grad is not None for p in params)
    assert net.eval() is net and not net.training
    net.train()
    assert nn.is_training()
    assert store["scale"].tolist() == [1.0, 1.0, 1.0, 1.0]


def test_freezing_a_store():
    store = nn.VarStore(seed=0)
    lin = nn.Linear(store.root() / "fc", 2, 2)
    assert store.is_trainable and lin.weight.requires_grad
    store.set_trainable(False)
    assert not store.is_trainable and not lin.weight.requires_grad
    assert not lin(wick.ones((1, 2))).requires_grad
