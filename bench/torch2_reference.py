#!/usr/bin/env python3
"""PyTorch 2 as the reference for wick_bench's cases: each case's Wick time (wick_bench, Google
Benchmark) and PyTorch 2's time for the same op on the same shapes and threads, interleaved run by
run (Wick, then PyTorch, --reps times), reported as ratios PyTorch time / Wick time (medians; below
1 means Wick is slower). Not a test: the numbers depend on the machine; the ratios are the result.

  bench/torch2_reference.py [--build build] [--threads 1] [--reps 7] [--filter REGEX] [--out FILE]

PyTorch 2 runs in its own virtual environment, made by this script on first use (default
<build>/torch2-venv; `pip install torch==<--torch> numpy` from PyPI, several GB with the CUDA
libraries PyPI's wheel depends on; nothing else uses it). Debian's python3-torch (1.13) stays the
reference of bench/train_vs_pytorch.py. The cases PyTorch has an equivalent for:

  unary_<op>_f32_<n>          torch.exp / tanh / sigmoid, F.gelu (erf), F.gelu(approximate="tanh")
  add_f32_<n>                 a + b (allocating, as Wick's; not in the default filter: Python's own
                              per-call cost, about 1.5 µs, is most of a small add here. The per-op
                              overhead is judged against in-process libtorch instead)
  matmul_f32_<m>x<k>x<n>      a @ b, b a constant weight, under inference_mode
  attention_f32_b<b>h<h>s<s>d<d>  F.scaled_dot_product_attention (no mask)
  encoder_f32_s<s>h384        one BERT encoder layer (bench/bench_encoder.cpp's ops, same order)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILTER = r"^(unary_.*_1000000|matmul_f32_(8x384x384|64x768x3072|1x2048x5632)|attention_f32_.*|encoder_f32_.*)/wick(/|$)"
# (case pattern, minimum ratio PyTorch 2 time / Wick time): issue 23's targets against PyTorch 2.
TARGETS = [(r"^unary_(exp|tanh|sigmoid|gelu_erf|gelu_tanh)_f32_1000000$", 1.0),
           (r"^attention_f32_", 1.0), (r"^encoder_f32_s128h384$", 1.0)]


# ---- the PyTorch side (runs inside the venv) -------------------------------------------------------

def torch_case(name, torch):
    """A zero-argument function running the case once, or None when PyTorch has no equivalent."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(1)

    def rand(*shape, scale=1.0):
        return (torch.rand(*shape, generator=g) * 2 - 1) * scale

    m = re.match(r"unary_(\w+?)_f32_(\d+)$", name)
    if m:
        x = rand(int(m.group(2)), scale=4.0)
        fn = {"exp": torch.exp, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "gelu_erf": F.gelu,
              "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}.get(m.group(1))
        return None if fn is None else (lambda: fn(x))
    m = re.match(r"add_f32_(\d+)$", name)
    if m:
        a, b = rand(int(m.group(1))), rand(int(m.group(1)))
        return lambda: a + b
    m = re.match(r"matmul_f32_(\d+)x(\d+)x(\d+)$", name)
    if m:
        mm, k, n = (int(v) for v in m.groups())
        a, b = rand(mm, k), rand(k, n)
        return lambda: a @ b
    m = re.match(r"attention_f32_b(\d+)h(\d+)s(\d+)d(\d+)$", name)
    if m:
        b, h, s, d = (int(v) for v in m.groups())
        q, k, v = rand(b, h, s, d), rand(b, h, s, d), rand(b, h, s, d)
        return lambda: F.scaled_dot_product_attention(q, k, v)
    m = re.match(r"encoder_f32_s(\d+)h384$", name)
    if m:
        return encoder_case(int(m.group(1)), torch, rand)
    return None


def encoder_case(s, torch, rand):
    F = torch.nn.functional
    hidden, heads, ffn = 384, 12, 1536
    wqkv, bqkv = rand(hidden, 3 * hidden, scale=0.05), rand(3 * hidden, scale=0.05)
    wo, bo = rand(hidden, hidden, scale=0.05), rand(hidden, scale=0.05)
    w1, c1 = rand(hidden, ffn, scale=0.05), rand(ffn, scale=0.05)
    w2, c2 = rand(ffn, hidden, scale=0.05), rand(hidden, scale=0.05)
    g1, b1, g2, b2 = rand(hidden) * 0.1 + 1, rand(hidden) * 0.1, rand(hidden) * 0.1 + 1, rand(hidden) * 0.1
    x = rand(1, s, hidden)

    def layer():
        qkv = (x @ wqkv + bqkv).reshape(1, s, 3, heads, hidden // heads)
        q, k, v = (qkv[:, :, i].permute(0, 2, 1, 3) for i in range(3))
        ctx = F.scaled_dot_product_attention(q, k, v).permute(0, 2, 1, 3).reshape(1, s, hidden)
        y = F.layer_norm(ctx @ wo + bo + x, (hidden,), g1, b1, 1e-12)
        h = F.gelu(y @ w1 + c1)
        return F.layer_norm(h @ w2 + c2 + y, (hidden,), g2, b2, 1e-12)
    return layer


def worker(cases, threads, min_time):
    import torch
    torch.set_num_threads(threads)
    out = {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(), "times": {}}
    with torch.inference_mode():
        for name in cases:
            fn = torch_case(name, torch)
            if fn is None:
                continue
            for _ in range(3):
                fn()
            iters, start = 0, time.perf_counter()
            while True:  # like Google Benchmark: as many iterations as fill min_time
                fn()
                iters += 1
                elapsed = time.perf_counter() - start
                if elapsed >= min_time:
                    break
            out["times"][name] = elapsed / iters
    print("RESULT " + json.dumps(out))


# ---- the driver ------------------------------------------------------------------------------------

def ensure_venv(venv, version):
    python = os.path.join(venv, "bin", "python")
    probe = [python, "-c", "import torch, sys; sys.exit(0 if torch.__version__.startswith('%s') else 1)" % version]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print("making %s with torch==%s (from PyPI)" % (venv, version), flush=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "torch==" + version, "numpy"], check=True)
    return python


def wick_times(bench, threads, regex, min_time):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        env = dict(os.environ, WICK_BENCH_THREADS=str(threads))
        subprocess.run([bench, "--benchmark_filter=" + regex, "--benchmark_min_time=%g" % min_time,
                        "--benchmark_out=" + f.name, "--benchmark_out_format=json"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        with open(f.name, encoding="utf-8") as r:
            text = r.read()
    if not text:
        raise SystemExit("wick_bench ran no case matching %r" % regex)
    report = json.loads(text)
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    times = {}
    for b in report["benchmarks"]:
        if not b.get("error_occurred"):
            times[b["run_name"].split("/")[0]] = b["real_time"] * unit[b["time_unit"]]
    return times, report.get("context", {})


def fmt(s):
    for u, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return "%.3g %s" % (s / scale, u)
    return "%.3g ns" % (s / 1e-9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--filter", default=DEFAULT_FILTER, help="wick_bench benchmark filter (Wick's cases)")
    ap.add_argument("--torch", default="2.15.0", help="the PyTorch version of the venv")
    ap.add_argument("--venv", default="")
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds per case per run, each side")
    ap.add_argument("--out", default="")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker.split(","), a.threads, a.min_time)
    python = ensure_venv(a.venv or os.path.join(a.build, "torch2-venv"), a.torch)
    bench = os.path.join(a.build, "bin", "wick_bench")
    wick, torch, ctx, info = {}, {}, {}, {}
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
    for rep in range(a.reps):  # interleaved: the machine's drift hits both sides alike
        w, ctx = wick_times(bench, a.threads, a.filter, a.min_time)
        for k, v in w.items():
            wick.setdefault(k, []).append(v)
        p = subprocess.run([python, os.path.abspath(__file__), "--worker", ",".join(sorted(w)), "--threads",
                            str(a.threads), "--min-time", str(a.min_time)], capture_output=True, text=True, env=env)
        line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        if p.returncode != 0 or not line:
            raise SystemExit("PyTorch worker failed:\n" + p.stdout[-2000:] + p.stderr[-2000:])
        info = json.loads(line[-1][len("RESULT "):])
        for k, v in info["times"].items():
            torch.setdefault(k, []).append(v)
        print("run %d of %d done" % (rep + 1, a.reps), file=sys.stderr, flush=True)
    rows = []
    for case in sorted(set(wick) & set(torch)):
        tw, tt = statistics.median(wick[case]), statistics.median(torch[case])
        target = next((t for pat, t in TARGETS if re.search(pat, case)), None)
        rows.append({"case": case, "wick_s": tw, "torch_s": tt, "ratio": tt / tw, "target": target,
                     "wick_runs": wick[case], "torch_runs": torch[case]})
    print("threads: %d, PyTorch %s (%s), cpu-onednn: %s, medians of %d interleaved runs"
          % (a.threads, info.get("torch"), info.get("cpu_capability"), ctx.get("cpu_plugin", "?"), a.reps))
    print("\n| case | Wick | PyTorch 2 | ratio PyTorch/Wick | target | holds |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        target = "" if r["target"] is None else ">= %.2f" % r["target"]
        holds = "" if r["target"] is None else ("yes" if r["ratio"] >= r["target"] else "no")
        print("| %s | %s | %s | %.2f | %s | %s |" % (r["case"], fmt(r["wick_s"]), fmt(r["torch_s"]), r["ratio"],
                                                    target, holds))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"threads": a.threads, "torch": info.get("torch"), "context": ctx, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
