#!/usr/bin/env python3
"""Python benchmark (issue 27 item 6): Wick from Python against NumPy and PyTorch, interleaved in
one process, medians of --reps runs, reported as ratios (Wick / other: below 1 means Wick is
faster). Not a test: the numbers depend on the machine; the ratios are the result.

  (a) per-call overhead: a 1-element add (a + b), and a 10-op elementwise chain on 1000 elements,
      each timed over --calls calls per run;
  (b) one Fashion-MNIST MLP epoch (784-256-128-10, Adam lr 1e-3, batch 128: examples/mlp.cpp and
      bench/train_pytorch.py, whose PyTorch model and data reading this script imports), data in
      memory, no evaluation; the C++ example (build/bin/wick-example-mlp) as a third contender.

  PYTHONPATH=build/python python3 bench/python_vs_torch.py [--reps 7] [--threads 1] [--limit N]
      [--skip-epoch] [--out FILE.json]

Wick runs on cpu-onednn with --threads threads (a config written for the run, as
bench/train_vs_pytorch.py), PyTorch with torch.set_num_threads(--threads) and OpenBLAS at one
thread, NumPy as installed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from openblas_core import with_coretype
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def configure(threads):
    """Writes Wick's config before wick is imported (the runtime reads it once)."""
    path = os.path.join(tempfile.mkdtemp(prefix="wick-pybench-"), "wick.toml")
    with open(path, "w") as f:
        f.write('[devices]\npriority = ["cpu-onednn"]\n[plugins.cpu-onednn]\nthreads = %d\n' % threads)
    os.environ["WICK_CONFIG"] = path
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ.update(with_coretype(os.environ))  # bench/openblas_core.py
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    return path


def per_call(fn, calls):
    start = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - start) / calls / 1000.0  # microseconds


def chain(x, m):
    """Ten elementwise ops; `m` is the namespace with exp, sin, tanh, abs, sqrt."""
    y = x * 0.5
    y = y + 1.0
    y = y * x
    y = y - 0.25
    y = m.tanh(y)
    y = m.exp(y)
    y = m.sin(y)
    y = y / 3.0
    y = m.abs(y)
    return m.sqrt(y)


def overhead_rows(reps, calls):
    import numpy as np
    import torch
    import wick

    one = {"wick": (wick.asarray([1.5]), wick.asarray([2.5])), "numpy": (np.array([1.5], np.float32),
                                                                       np.array([2.5], np.float32)),
           "pytorch": (torch.tensor([1.5]), torch.tensor([2.5]))}
    data = np.random.default_rng(0).random(1000).astype(np.float32)
    big = {"wick": (wick.asarray(data), wick), "numpy": (data, np), "pytorch": (torch.from_numpy(data), torch)}
    cases = [("1-element add", {k: (lambda a=a, b=b: a + b) for k, (a, b) in one.items()}, calls),
             ("10-op chain, 1000 elements", {k: (lambda x=x, m=m: chain(x, m)) for k, (x, m) in big.items()},
              max(calls // 10, 1))]
    rows = []
    for name, fns, n in cases:
        times = {k: [] for k in fns}
        for fn in fns.values():  # warm up
            per_call(fn, n)
        for _ in range(reps):  # interleaved: drift on the machine hits all alike
            for k, fn in fns.items():
                times[k].append(per_call(fn, n))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"case": name, "calls": n, "us": med, "runs": times,
                     "wick/numpy": med["wick"] / med["numpy"], "wick/pytorch": med["wick"] / med["pytorch"]})
    return rows


def wick_epoch(train, limit, seed):
    import wick
    from wick import nn, optim

    store = nn.VarStore(seed=seed)
    r = store.root()
    model = nn.Sequential(nn.Linear(r / "0", 784, 256), nn.ReLU(), nn.Linear(r / "2", 256, 128), nn.ReLU(),
                          nn.Linear(r / "4", 128, 10))
    opt = optim.Adam(store.parameters(), lr=1e-3)
    start = time.perf_counter()
    total = 0.0
    for images, labels in wick.data.batches(train, 128, shuffle_seed=seed, image_shape=(784,), limit=limit or None):
        loss = nn.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += float(loss)
    return time.perf_counter() - start


def torch_epoch(tp, train_x, train_y, limit, seed):
    import torch

    torch.manual_seed(seed)
    model = tp.model_of("mlp")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ce = torch.nn.CrossEntropyLoss()
    n = train_x.shape[0] if not limit else min(limit, train_x.shape[0])
    order = torch.randperm(train_x.shape[0])
    start = time.perf_counter()
    total = 0.0
    for i in range(0, n, 128):  # bench/train_pytorch.py's loop
        idx = order[i:i + 128]
        x = (train_x[idx].to(torch.float32) / 255.0).reshape(-1, 784)
        loss = ce(model(x), train_y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    return time.perf_counter() - start


def cpp_epoch(build, config, limit):
    cmd = [os.path.join(build, "bin", "wick-example-mlp"), "--config", config, "--epochs", "1", "--batch-size", "128",
           "--no-eval", "--no-progress"] + (["--limit", str(limit)] if limit else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("RESULT ")][-1]
    return float(dict(kv.split("=", 1) for kv in line.split()[1:])["epoch_seconds"])


def epoch_row(reps, limit, threads, build, config):
    import numpy as np
    import torch
    import wick

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import train_pytorch as tp

    torch.set_num_threads(threads)
    f = wick.data.find_fashion_mnist()
    train = wick.data.Dataset.from_idx(f["train_images"], f["train_labels"])
    train_x = torch.from_numpy(tp.read_idx(f["train_images"]).copy())
    train_y = torch.from_numpy(tp.read_idx(f["train_labels"]).astype(np.int64))
    have_cpp = os.access(os.path.join(build, "bin", "wick-example-mlp"), os.X_OK)
    times = {"wick": [], "pytorch": [], "wick C++": []}
    for rep in range(reps):
        times["wick"].append(wick_epoch(train, limit, rep))
        times["pytorch"].append(torch_epoch(tp, train_x, train_y, limit, rep))
        if have_cpp:
            times["wick C++"].append(cpp_epoch(build, config, limit))
    med = {k: statistics.median(v) for k, v in times.items() if v}
    return {"case": "MLP epoch (%d images, batch 128, Adam)" % (limit or 60000), "s": med, "runs": times,
            "wick/pytorch": med["wick"] / med["pytorch"],
            "wick/wick C++": med["wick"] / med["wick C++"] if "wick C++" in med else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000, help="calls per run of the 1-element add (the chain: / 10)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="images per epoch (0: all 60000)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--skip-epoch", action="store_true")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.reps < 7:
        raise SystemExit("--reps must be at least 7")
    config = configure(a.threads)
    import numpy
    import torch

    print("threads %d; NumPy %s, PyTorch %s" % (a.threads, numpy.__version__, torch.__version__), flush=True)
    torch.set_num_threads(a.threads)
    result = {"overhead": overhead_rows(a.reps, a.calls)}
    print("| case | Wick | NumPy | PyTorch | Wick / NumPy | Wick / PyTorch |\n|---|---|---|---|---|---|")
    for r in result["overhead"]:
        u = r["us"]
        print("| %s | %.2f us | %.2f us | %.2f us | %.2f | %.2f |" % (r["case"], u["wick"], u["numpy"], u["pytorch"],
                                                                     r["wick/numpy"], r["wick/pytorch"]), flush=True)
    if not a.skip_epoch:
        r = result["epoch"] = epoch_row(a.reps, a.limit, a.threads, a.build, config)
        s = r["s"]
        print("\n| case | Wick (Python) | PyTorch | Wick (C++ example) | Wick / PyTorch | Python / C++ |\n"
              "|---|---|---|---|---|---|")
        print("| %s | %.3f s | %.3f s | %s | %.2f | %s |" % (
            r["case"], s["wick"], s["pytorch"], "%.3f s" % s["wick C++"] if "wick C++" in s else "-",
            r["wick/pytorch"], "%.2f" % r["wick/wick C++"] if r["wick/wick C++"] else "-"))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
