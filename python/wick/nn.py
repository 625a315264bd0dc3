"""Neural-network layers, losses and the parameter store (wick::nn from Python).

    store = wick.nn.VarStore(seed=0)                    # named parameters, seeded initialisation
    root = store.root()
    model = wick.nn.Sequential(
        wick.nn.Linear(root / "0", 784, 256), wick.nn.ReLU(),
        wick.nn.Linear(root / "2", 256, 10))
    loss = wick.nn.cross_entropy(model(x), labels)
    store.save("mlp.safetensors")                       # names as PyTorch's state_dict: "0.weight"

Layers with parameters take the Path they live under as their first argument (``root / "encoder"
/ 0`` names "encoder.0.*"), as in C++: the VarStore holds every parameter, initialises it from its
seed and the parameter's name (the same numbers on every device), saves and loads safetensors by
name (a file from PyTorch's state_dict loads as it is), and ``store.parameters()`` is what an
optimizer takes. Every layer is callable, runs with the GIL released, and has ``parameters()``.

``train()`` / ``eval()`` switch Dropout's and BatchNorm's behaviour for the calling thread (the C++
setting is per thread, not per layer).
"""
from ._wick import Array as _Array
from ._wick import nn as _nn

VarStore = _nn.VarStore
Path = _nn.Path
Linear = _nn.Linear
Conv2d = _nn.Conv2d
Embedding = _nn.Embedding
LayerNorm = _nn.LayerNorm
BatchNorm = _nn.BatchNorm
BatchNorm1d = _nn.BatchNorm
BatchNorm2d = _nn.BatchNorm
MaxPool2d = _nn.MaxPool2d
AvgPool2d = _nn.AvgPool2d
Dropout = _nn.Dropout
Flatten = _nn.Flatten

relu = _nn.relu
sigmoid = _nn.sigmoid
tanh = _nn.tanh
gelu = _nn.gelu
silu = _nn.silu
cross_entropy = _nn.cross_entropy
mse_loss = _nn.mse_loss
binary_cross_entropy_with_logits = _nn.binary_cross_entropy_with_logits
accuracy = _nn.accuracy
set_training = _nn.set_training
is_training = _nn.is_training
save_safetensors = _nn.save_safetensors
load_safetensors = _nn.load_safetensors

__all__ = [
    "VarStore", "Path", "Module", "Sequential", "Linear", "Conv2d", "Embedding", "LayerNorm", "BatchNorm",
    "BatchNorm1d", "BatchNorm2d", "MaxPool2d", "AvgPool2d", "Dropout", "Flatten", "ReLU", "Sigmoid", "Tanh",
    "GELU", "SiLU", "CrossEntropyLoss", "MSELoss", "BCEWithLogitsLoss", "relu", "sigmoid", "tanh", "gelu",
    "silu", "cross_entropy", "mse_loss", "binary_cross_entropy_with_logits", "accuracy", "set_training",
    "is_training", "save_safetensors", "load_safetensors",
]


def _collect(value, out, seen):
    if isinstance(value, _Array):
        if value.requires_grad and value._autograd_id not in seen:  # one variable, maybe several wrappers
            seen.add(value._autograd_id)
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, out, seen)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, out, seen)
    elif callable(getattr(value, "parameters", None)) and not isinstance(value, (type, VarStore)):
        for p in value.parameters():
            _collect(p, out, seen)


class Module:
    """Base of Python models, as torch.nn.Module: define ``forward``; ``parameters()`` gathers the
    trainable arrays of the attributes (layers, other Modules, arrays that require grad, and lists,
    tuples and dicts of them) in attribute order; ``train()`` / ``eval()`` set the thread's mode,
    as the C++ layers do.

        class Net(wick.nn.Module):
            def __init__(self, root):
                self.fc1 = wick.nn.Linear(root / "fc1", 784, 64)
                self.fc2 = wick.nn.Linear(root / "fc2", 64, 10)
            def forward(self, x):
                return self.fc2(wick.nn.relu(self.fc1(x)))
    """

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        raise NotImplementedError

    def parameters(self):
        out, seen = [], set()
        for value in vars(self).values():
            _collect(value, out, seen)
        return out

    def train(self, mode=True):
        set_training(mode)
        return self

    def eval(self):
        return self.train(False)

    @property
    def training(self):
        return is_training()

    def __repr__(self):
        return type(self).__name__ + "()"


class _Activation(Module):
    _fn = None

    def forward(self, x):
        return type(self)._fn(x)


class ReLU(_Activation):
    """max(x, 0)."""
    _fn = relu


class Sigmoid(_Activation):
    """1 / (1 + exp(-x))."""
    _fn = sigmoid


class Tanh(_Activation):
    """tanh(x)."""
    _fn = tanh


class GELU(_Activation):
    """x Phi(x) in its tanh approximation (PyTorch's GELU(approximate='tanh'))."""
    _fn = gelu


class SiLU(_Activation):
    """x sigmoid(x)."""
    _fn = silu


class Sequential(Module):
    """Layers applied in order; ``parameters()`` gathers theirs (in layer order)."""

    def __init__(self, *layers):
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def append(self, layer):
        self.layers.append(layer)
        return self

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self):
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def __repr__(self):
        inner = ",\n".join("  (%d): %s" % (i, type(l).__name__) for i, l in enumerate(self.layers))
        return "Sequential(\n" + inner + "\n)"


class CrossEntropyLoss(Module):
    """Mean cross entropy of logits [N, C] and integer class labels [N]."""

    def forward(self, logits, labels):
        return cross_entropy(logits, labels)


class MSELoss(Module):
    """Mean squared error."""

    def forward(self, prediction, target):
        return mse_loss(prediction, target)


class BCEWithLogitsLoss(Module):
    """Mean binary cross entropy of logits against targets in [0, 1] (numerically stable)."""

    def forward(self, logits, target):
        return binary_cross_entropy_with_logits(logits, target)
