#!/usr/bin/env python3
"""Fashion-MNIST's 784-256-128-10 MLP trained with Adam from Python: examples/mlp.cpp's model,
data order, batch size and optimizer, in a few lines of wick.

  PYTHONPATH=build/python python3 examples/python/train_mnist_mlp.py [--epochs 5] [--batch-size 128]
      [--lr 1e-3] [--seed 0] [--limit N] [--test-limit N] [--data DIR] [--device cpu] [--save FILE]

The data is Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), or --data, or
$WICK_FASHION_MNIST_DIR. Prints one line per epoch: the mean training loss, the test accuracy,
the epoch's time.
"""
import argparse
import time

import wick
from wick import nn, optim


def mlp(root):
    return nn.Sequential(nn.Linear(root / "0", 784, 256), nn.ReLU(), nn.Linear(root / "2", 256, 128), nn.ReLU(),
                         nn.Linear(root / "4", 128, 10))


def train_epoch(model, opt, train, epoch, args):
    """One pass over the (shuffled) training set; returns the mean loss."""
    model.train()
    total, steps = 0.0, 0
    seed = args.seed * 1000003 + epoch  # the C++ example's order
    for images, labels in wick.data.batches(train, args.batch_size, shuffle_seed=seed, image_shape=(784,),
                                            device=args.device, limit=args.limit or None):
        loss = nn.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += float(loss)
        steps += 1
    return total / max(steps, 1)


def evaluate(model, test, args):
    """Accuracy over the test set (or its first --test-limit images), without recording."""
    model.eval()
    correct, seen = 0.0, 0
    with wick.no_grad():
        for images, labels in wick.data.batches(test, 1000, image_shape=(784,), device=args.device,
                                                limit=args.test_limit or None):
            correct += nn.accuracy(model(images), labels) * labels.shape[0]
            seen += labels.shape[0]
    return correct / max(seen, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images of each epoch's order")
    ap.add_argument("--test-limit", type=int, default=0, help="evaluate on the first N test images")
    ap.add_argument("--data", default=None, help="directory of the Fashion-MNIST .gz files")
    ap.add_argument("--device", default=None, help="e.g. cpu, opencl:0 (default: the configured device)")
    ap.add_argument("--save", default=None, help="write the trained weights to this safetensors file")
    args = ap.parse_args()

    train, test = wick.data.fashion_mnist(True, args.data), wick.data.fashion_mnist(False, args.data)
    store = nn.VarStore(device=args.device, seed=args.seed)
    model = mlp(store.root())
    opt = optim.Adam(store.parameters(), lr=args.lr)
    print("device: %s; model: %d parameters; data: %d training, %d test images"
          % (store.device.name, store.num_parameters(), len(train), len(test)), flush=True)
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        loss = train_epoch(model, opt, train, epoch, args)
        seconds = time.perf_counter() - start
        print("epoch %d: train loss %.4f, test accuracy %.4f, %.2f s" % (epoch, loss, evaluate(model, test, args),
                                                                        seconds), flush=True)
    if args.save:
        store.save(args.save)
        print("weights: " + args.save)


if __name__ == "__main__":
    main()
