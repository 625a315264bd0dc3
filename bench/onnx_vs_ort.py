#!/usr/bin/env python3
"""`wick run` against ONNX Runtime on the same .onnx files, interleaved (issue 25, item 5).

  bench/onnx_vs_ort.py [--build build] [--runs 7] [--threads 1,2] [--models resnet50,minilm,gpt2]
                       [--check-devices cpu-onednn,opencl] [--out FILE]

Models, exported once into BUILD/bench-onnx (random weights, seeded; torch.onnx.export, opset 17):
  resnet50  torchvision's ResNet-50 (weights=None), input [batch, 3, 224, 224], batch 1 and 8;
  minilm    all-MiniLM-L6-v2's BertModel (build/models/all-MiniLM-L6-v2, scripts/setup.sh) with
            input_ids, attention_mask, token_type_ids: batch 8 x 128 and 1 x 16;
  gpt2      a random-weight transformers GPT2LMHeadModel of GPT-2 small's shape (12 layers, 768
            wide, 12 heads, vocabulary 50257), eager attention, no cache: logits of 1 x 128 tokens.
For each (model, shape, threads): a block of ONNX Runtime runs in this process (CPU execution
provider, its default graph optimisations, intra_op_num_threads = threads), then a block of
`wick run --repeat` in a subprocess (a config with [plugins.cpu-onednn] threads; the per-run
times it prints),
--runs blocks each, interleaved; after 2 warm-up runs, each block's median; the table gives the
medians of the block medians and the ratio Wick / ONNX Runtime (below 1: Wick is faster).
Before timing, each model runs once with `wick run --strict` on every --check-devices device and
its outputs are compared with ONNX Runtime's (max |wick - ort| / max(1, max |ort|) <= 1e-4).

Environment: the fixture venv (scripts/fixture-venv.sh: Debian's torch 1.13 and transformers) with
  pip install onnxruntime onnx==1.16.2     and   apt-get install python3-torchvision
Not a test; run it under the build lock (flock /tmp/wick-build.lock) so that builds do not run
beside it.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export_models(out, minilm_dir):
    import torch
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    path = os.path.join(out, "resnet50.onnx")
    if not os.path.exists(path):
        import torchvision
        m = torchvision.models.resnet50(weights=None).eval()
        torch.onnx.export(m, torch.zeros(1, 3, 224, 224), path, opset_version=17, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    path = os.path.join(out, "minilm.onnx")
    if not os.path.exists(path):
        from transformers import BertModel
        m = BertModel.from_pretrained(minilm_dir, attn_implementation="eager").eval()
        ids = torch.ones(1, 16, dtype=torch.int64)
        axes = {0: "batch", 1: "seq"}
        torch.onnx.export(m, (ids, torch.ones_like(ids), torch.zeros_like(ids)), path, opset_version=17,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                        "last_hidden_state": axes})
    path = os.path.join(out, "gpt2.onnx")
    if not os.path.exists(path):
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024,
                         use_cache=False, attn_implementation="eager")
        m = GPT2LMHeadModel(cfg).eval()

        class Logits(torch.nn.Module):
            def __init__(self, lm):
                super().__init__()
                self.lm = lm

            def forward(self, ids):
                return self.lm(input_ids=ids, use_cache=False).logits

        torch.onnx.export(Logits(m), torch.ones(1, 128, dtype=torch.int64), path, opset_version=17,
                          input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})


def cases(names):
    rng = np.random.default_rng(0)
    out = []
    if "resnet50" in names:
        for b in (1, 8):
            out.append(("resnet50", f"batch {b}", {"x": rng.standard_normal((b, 3, 224, 224)).astype(np.float32)}))
    if "minilm" in names:
        for b, s in ((8, 128), (1, 16)):
            ids = rng.integers(1000, 30000, (b, s)).astype(np.int64)
            out.append(("minilm", f"{b} x {s}", {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                 "token_type_ids": np.zeros_like(ids)}))
    if "gpt2" in names:
        out.append(("gpt2", "1 x 128", {"input_ids": rng.integers(0, 50257, (1, 128)).astype(np.int64)}))
    return out


def write_inputs(feeds, d):
    args = []
    for name, a in feeds.items():
        p = os.path.join(d, name + ".npy")
        np.save(p, a)
        args += ["--input", f"{name}={p}"]
    return args


def thread_config(threads):
    """A config file giving cpu-onednn `threads` (its OpenMP pool; OMP_NUM_THREADS is not read)."""
    path = os.path.join(tempfile.gettempdir(), f"wick-bench-onnx-threads-{threads}.toml")
    with open(path, "w") as f:
        f.write(f"[plugins.cpu-onednn]\nthreads = {threads}\n")
    return path


def wick_block(wick, model, input_args, threads, repeat, extra=(), outdir=None):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [wick, "--config", thread_config(threads), "run", model, *input_args, "--repeat", str(repeat), *extra]
    if outdir:
        cmd += ["--output", outdir]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
    times = [float(l.split(":")[1].split()[0]) for l in r.stderr.splitlines() if l.startswith("run ")]
    return times


def ort_session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def ort_block(sess, feeds, repeat):
    import time
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def check_outputs(wick, model, feeds, input_args, devices, tmp):
    sess = ort_session(model, 2)
    names = [o.name for o in sess.get_outputs()]
    ref = sess.run(None, feeds)
    lines = []
    for dev in devices:
        outdir = os.path.join(tmp, "out-" + dev)
        wick_block(wick, model, input_args, 2, 1, ("--device", dev, "--strict"), outdir)
        err = 0.0
        for name, want in zip(names, ref):  # wick run names each file after its output
            got = np.load(os.path.join(outdir, "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".npy"))
            err = max(err, float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want))))))
        lines.append(f"{dev} --strict: scaled max error {err:.2e} over {len(names)} outputs "
                     f"{'ok' if err <= 1e-4 else 'OVER 1e-4'}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=5, help="runs per block (2 more warm up)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="resnet50,minilm,gpt2")
    ap.add_argument("--check-devices", default="cpu-onednn,opencl")
    ap.add_argument("--out")
    a = ap.parse_args()
    wick = os.path.join(a.build, "bin", "wick")
    models_dir = os.path.join(a.build, "bench-onnx")
    export_models(models_dir, os.path.join(a.build, "models", "all-MiniLM-L6-v2"))
    rows = ["| model | shape | threads | ONNX Runtime ms | Wick ms | Wick / ORT |", "|---|---|---|---|---|---|"]
    checks = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, shape, feeds in cases(a.models.split(",")):
            model = os.path.join(models_dir, name + ".onnx")
            d = os.path.join(tmp, f"{name}-{shape.replace(' ', '')}")
            os.makedirs(d)
            input_args = write_inputs(feeds, d)
            if a.check_devices:
                for line in check_outputs(wick, model, feeds, input_args, a.check_devices.split(","), d):
                    checks.append(f"{name} {shape}: {line}")
                    print(checks[-1], flush=True)
            for t in [int(x) for x in a.threads.split(",")]:
                sess = ort_session(model, t)
                ort_meds, wick_meds = [], []
                for _ in range(a.runs):
                    ort_meds.append(statistics.median(ort_block(sess, feeds, a.repeat + 2)[2:]))
                    wick_meds.append(statistics.median(wick_block(wick, model, input_args, t, a.repeat + 2)[2:]))
                o, w = statistics.median(ort_meds), statistics.median(wick_meds)
                rows.append(f"| {name} | {shape} | {t} | {o:.2f} | {w:.2f} | {w / o:.2f} |")
                print(rows[-1], flush=True)
    text = "\n".join(checks + [""] + rows) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
