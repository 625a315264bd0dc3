#!/usr/bin/env python3
"""PyTorch's side of tests/test_training.cpp: the three Fashion-MNIST models of examples/models.hpp
built in PyTorch (Debian's python3-torch 1.13) with PyTorch's own initialisation, their state_dicts
written as safetensors files by PyTorch-side code (the format written by hand below: 8-byte
little-endian header length, JSON header, raw little-endian data), and for each a batch of inputs
with PyTorch's outputs. It also records one Adam and one AdamW step of PyTorch's optimizers.

  /usr/bin/python3 tests/data/make_torch_fixtures.py   # rewrites tests/data/torch/*.safetensors
"""
import json
import os
import struct

import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch")
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def save(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt", "writer": "make_torch_fixtures.py"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 784), nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


def models():
    return {
        "mlp": (nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)),
                (5, 784)),
        "cnn": (nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10)),
                (3, 1, 28, 28)),
        "autoencoder": (AutoEncoder(), (4, 784)),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(20261201)
    for name, (model, shape) in models().items():
        x = torch.rand(shape)
        with torch.no_grad():
            y = model(x)
        save(os.path.join(OUT, name + ".safetensors"), model.state_dict())
        save(os.path.join(OUT, name + "_io.safetensors"), {"input": x, "output": y})
    # Optimizer steps: a parameter and three gradients, then the parameter after each step.
    p0 = torch.randn(3, 4, dtype=torch.float64)
    grads = [torch.randn(3, 4, dtype=torch.float64) for _ in range(3)]
    record = {"param": p0, **{"grad%d" % i: g for i, g in enumerate(grads)}}
    for label, make in (("adam", lambda p: torch.optim.Adam([p], lr=0.01, weight_decay=0.1)),
                        ("adamw", lambda p: torch.optim.AdamW([p], lr=0.01, weight_decay=0.1)),
                        ("sgd", lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True))):
        p = p0.clone().requires_grad_(True)
        opt = make(p)
        for i, g in enumerate(grads):
            p.grad = g.clone()
            opt.step()
            record["%s_step%d" % (label, i)] = p.detach().clone()
    save(os.path.join(OUT, "optimizers.safetensors"), record)
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
