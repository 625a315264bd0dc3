#!/usr/bin/env python3
"""Training benchmark: Wick's examples against PyTorch on the same models, data, optimizer (Adam),
batch sizes and thread counts, interleaved in one run, reported as epoch-time ratios (Wick / PyTorch:
below 1 means Wick is faster). Not a test: numbers depend on the machine; the ratios are the result.

  bench/train_vs_pytorch.py [--build build] [--reps 7] [--threads 1,2] [--limit N] [--out FILE]

PyTorch is Debian's python3-torch (1.13); its BLAS is whatever libblas.so.3 points to (OpenBLAS
when libopenblas0-pthread is installed; Debian's reference BLAS otherwise, far slower): the script
prints it. Each run is one training epoch (--limit: the first N images of the shuffled order) with
the data already in memory and no evaluation; medians over --reps runs per contender.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from openblas_core import coretype, with_coretype

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = [("mlp", 128), ("mlp", 32), ("cnn", 128)]


def result_of(output):
    line = [l for l in output.splitlines() if l.startswith("RESULT ")]
    if not line:
        raise SystemExit("no RESULT line in:\n" + output[-2000:])
    return dict(kv.split("=", 1) for kv in line[-1].split()[1:])


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit("failed: " + " ".join(cmd) + "\n" + p.stdout[-2000:] + p.stderr[-2000:])
    return result_of(p.stdout)


def blas():
    try:
        return os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--limit", type=int, default=0, help="images per epoch (0: all 60000)")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--out", default="")
    ap.add_argument("--configs", default="", help="model:batch,... (default: mlp:128,mlp:32,cnn:128)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wick-train-bench-")
    rows = []
    print("PyTorch BLAS: %s, OPENBLAS_CORETYPE=%s" % (blas(), os.environ.get("OPENBLAS_CORETYPE", coretype())),
          flush=True)
    for threads in [int(t) for t in a.threads.split(",")]:
        config = os.path.join(tmp, "threads%d.toml" % threads)
        with open(config, "w") as f:
            f.write("[devices]\npriority = [\"cpu-onednn\"]\n[plugins.cpu-onednn]\nthreads = %d\n" % threads)
        # PyTorch runs its own OpenMP threads; OpenBLAS's pool on top of them oversubscribes the cores
        # (measured: 3x slower at 2 threads), so OpenBLAS gets one thread, PyTorch's best setting.
        # OPENBLAS_CORETYPE: OpenBLAS's kernels for this CPU, where it does not recognise it
        # (bench/openblas_core.py).
        env = with_coretype(dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
                                 WICK_PLUGIN_PATH=""))
        configs = [(c.split(":")[0], int(c.split(":")[1])) for c in a.configs.split(",")] if a.configs else CONFIGS
        for model, batch in configs:
            limit = ["--limit", str(a.limit)] if a.limit else []
            wick_cmd = [os.path.join(a.build, "bin", "wick-example-" + model), "--config", config, "--epochs", "1",
                        "--batch-size", str(batch), "--no-eval", "--no-progress"] + limit
            torch_cmd = [a.python, os.path.join(ROOT, "bench", "train_pytorch.py"), "--model", model, "--threads",
                         str(threads), "--batch-size", str(batch)] + limit
            wick_t, torch_t = [], []
            for _ in range(a.reps):  # interleaved: drift on the machine hits both alike
                wick_t.append(float(run(wick_cmd, env)["epoch_seconds"]))
                torch_t.append(float(run(torch_cmd, env)["epoch_seconds"]))
            w, t = statistics.median(wick_t), statistics.median(torch_t)
            row = {"model": model, "batch": batch, "threads": threads, "images": a.limit or 60000,
                   "wick_s": w, "pytorch_s": t, "ratio": w / t, "wick_runs": wick_t, "pytorch_runs": torch_t}
            rows.append(row)
            print("%-4s batch %3d, %d thread%s: Wick %.3f s, PyTorch %.3f s per epoch -> ratio %.2f" %
                  (model, batch, threads, "" if threads == 1 else "s", w, t, w / t), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"blas": blas(), "reps": a.reps, "rows": rows}, f, indent=1)
    print("\n| model | batch | threads | Wick s/epoch | PyTorch s/epoch | Wick / PyTorch |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %.3f | %.3f | %.2f |" % (r["model"], r["batch"], r["threads"], r["wick_s"], r["pytorch_s"], r["ratio"]))


if __name__ == "__main__":
    main()
