#!/usr/bin/env python3
"""The PyTorch side of the training benchmark: the same models, data, optimizer and batch sizes as
examples/{mlp,cnn,autoencoder}.cpp, timed the same way (one training epoch, data already in
memory, batches gathered from a shuffled order). Prints "RESULT model=... epoch_seconds=...".

  train_pytorch.py --model mlp --batch-size 128 --threads 1 [--epochs 1] [--limit N] [--eval]
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype, rank = struct.unpack(">HBB", data[:4])
    assert zero == 0 and dtype == 0x08, path
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def model_of(name):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "autoencoder":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(),
                             nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 784), nn.Sigmoid())
    raise SystemExit("unknown model " + name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=None, help="default: 2e-3 for the CNN, 1e-3 otherwise (as the examples)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--eval", action="store_true")
    ap.add_argument("--data", default=os.environ.get("WICK_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
    a = ap.parse_args()
    if a.lr is None:
        a.lr = 2e-3 if a.model == "cnn" else 1e-3
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    shape = (-1, 1, 28, 28) if a.model == "cnn" else (-1, 784)
    train_x = torch.from_numpy(read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz")).copy())
    train_y = torch.from_numpy(read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    test_x = torch.from_numpy(read_idx(os.path.join(a.data, "t10k-images-idx3-ubyte.gz")).copy())
    test_y = torch.from_numpy(read_idx(os.path.join(a.data, "t10k-labels-idx1-ubyte.gz")).astype(np.int64))
    model = model_of(a.model)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    ce, mse = nn.CrossEntropyLoss(), nn.MSELoss()
    n = train_x.shape[0] if a.limit <= 0 else min(a.limit, train_x.shape[0])
    loss_value, seconds, metric = 0.0, 0.0, 0.0
    for epoch in range(a.epochs):
        order = torch.randperm(train_x.shape[0])
        start = time.perf_counter()
        total = 0.0
        steps = 0
        for i in range(0, n, a.batch_size):
            idx = order[i:i + a.batch_size]
            x = (train_x[idx].to(torch.float32) / 255.0).reshape(shape)
            out = model(x)
            loss = mse(out, x) if a.model == "autoencoder" else ce(out, train_y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            steps += 1
        seconds = time.perf_counter() - start
        loss_value = total / max(steps, 1)
        if a.eval:
            with torch.no_grad():
                x = (test_x.to(torch.float32) / 255.0).reshape(shape)
                out = model(x)
                metric = mse(out, x).item() if a.model == "autoencoder" else (out.argmax(1) == test_y).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss_value:.4f}, metric {metric:.4f}, {seconds:.2f} s", flush=True)
    print(f"RESULT model={a.model} loss={loss_value:.6f} metric={metric:.6f} epoch_seconds={seconds:.6f}")


if __name__ == "__main__":
    main()
