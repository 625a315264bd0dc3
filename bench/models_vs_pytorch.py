#!/usr/bin/env python3
"""Wick's models against PyTorch, ONNX Runtime and transformers, in one run (issue 24, item 8).

  bench/models_vs_pytorch.py [--build build] [--runs 7] [--quick] [--skip-embed] [--skip-decode]
                             [--threads 1,2] [--decode-threads 2] [--out FILE]

1. Embeddings: all-MiniLM-L6-v2 (build/models/all-MiniLM-L6-v2, scripts/setup.sh fetches it),
   sentence-transformers' pipeline (BERT, mean pooling over the attention mask, L2 normalisation)
   for a batch of 8 x 128 tokens and for one 16-token sentence, at 1 and 2 threads:
   - Wick: build/bin/wick_bench_models embed (bench/bench_models.cpp), one process per thread
     count, kept running and fed one request per run (so runs interleave without reloading);
   - PyTorch: Debian's torch (1.13, OpenBLAS) + transformers' BertModel under torch.inference_mode;
   - ONNX Runtime: PyPI onnxruntime on the same model (BERT + pooling + normalisation in one
     module) exported with torch.onnx.export, intra_op_num_threads = threads.
   The three run in turn, request by request (Wick, PyTorch, ONNX Runtime), --runs times after two
   warm-up runs each; medians are reported and ratios competitor time / Wick time (above 1: Wick
   is faster).
2. Decoding: a random-weight model of TinyLlama-1.1B's shape (hidden 2048, 22 layers, 32 heads,
   4 KV heads, intermediate 5632, vocabulary 32000; seeded, made by this script into a temporary
   directory and removed at the end) in f32 and bf16, batch 1, greedy, 128 new tokens after a
   128-token prompt: Wick's generate() (wick_bench_models decode) against transformers'
   generate() in the same run, interleaved; and against the memory-bandwidth bound: the bytes of
   weights one token reads (every weight but the input embedding) over the machine's copy
   bandwidth (torch's copy_ of a 1 GiB f32 tensor on --decode-threads threads, counted STREAM's
   way: bytes read + bytes written). Decode tokens/s counts the tokens after the first
   (its time is the prefill's): (N - 1) / (time of token N - time of token 1), taken from a
   streamer in transformers and from the streaming callback in Wick.
   --quick: 2 layers, a 32-token prompt, 32 new tokens, 3 runs (a few minutes in all).

The environment (the fixture venv plus ONNX Runtime):
  scripts/fixture-venv.sh                 # /tmp/hfv: Debian torch + transformers 4.46.3, ...
  /tmp/hfv/bin/pip install onnxruntime    # PyPI onnxruntime (1.32 when this was written)
  /tmp/hfv/bin/python bench/models_vs_pytorch.py --quick
Not a test: the numbers depend on the machine; run it under the build lock (flock
/tmp/wick-build.lock) so builds do not run beside it.
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from openblas_core import with_coretype  # noqa: E402

os.environ.update(with_coretype(os.environ))  # before torch loads OpenBLAS (bench/openblas_core.py)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

# Debian's torch 1.13 cannot import torch.distributed, which generate() asks about.
transformers.generation.utils.is_fsdp_managed_module = lambda m: False


def median(xs):
    return statistics.median(xs)


def settle(args):
    """A pause between contenders: the thread pools of the one before (OpenMP's, ONNX Runtime's)
    spin for a while after their work, and on a machine with few cores they would take the next
    contender's cores."""
    time.sleep(args.pause)


class WickDriver:
    """One wick_bench_models process: a request per line in, one JSON line out."""

    def __init__(self, binary, mode, model_dir, threads):
        cmd = [binary, mode, "--model", model_dir, "--threads", str(threads)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"{' '.join(cmd)} exited before it was ready (see its stderr above)")

    def request(self, words):
        self.proc.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("wick_bench_models exited mid-run (see its stderr above)")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


# ---- embeddings ------------------------------------------------------------------------------------

class Pooled(torch.nn.Module):
    """BERT + mean pooling over the mask + L2 normalisation: sentence-transformers' pipeline."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)


def embed_inputs(batch, tokens, vocab, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocab, size=(batch, tokens), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    return ids


def bench_embed(args, binary, results):
    model_dir = os.path.join(ROOT, args.build, "models", "all-MiniLM-L6-v2")
    import onnxruntime as ort
    bert = transformers.AutoModel.from_pretrained(model_dir).eval()
    module = Pooled(bert).eval()
    onnx_path = os.path.join(args.tmp, "minilm.onnx")
    ids = torch.from_numpy(embed_inputs(2, 16, bert.config.vocab_size, 0))
    with torch.no_grad():
        torch.onnx.export(module, (ids, torch.ones_like(ids), torch.zeros_like(ids)), onnx_path,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["embeddings"], opset_version=14,
                          dynamic_axes={n: {0: "batch", 1: "tokens"}
                                        for n in ["input_ids", "attention_mask", "token_type_ids"]})
    shapes = [(8, 128), (1, 16)]
    for threads in args.thread_list:
        torch.set_num_threads(threads)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
        wick = WickDriver(binary, "embed", model_dir, threads)
        for batch, tokens in shapes:
            x = embed_inputs(batch, tokens, bert.config.vocab_size, 1)
            xt = torch.from_numpy(x)
            feeds = {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)}
            times = {"wick": [], "pytorch": [], "onnxruntime": []}
            outs = {}
            for run in range(args.runs + 2):
                reply = wick.request([batch, tokens] + x.flatten().tolist())
                settle(args)
                t0 = time.perf_counter()
                with torch.inference_mode():
                    outs["pytorch"] = module(xt, torch.ones_like(xt), torch.zeros_like(xt))
                t_torch = time.perf_counter() - t0
                settle(args)
                t0 = time.perf_counter()
                outs["onnxruntime"] = sess.run(None, feeds)[0]
                t_ort = time.perf_counter() - t0
                settle(args)
                if run >= 2:
                    times["wick"].append(reply["seconds"])
                    times["pytorch"].append(t_torch)
                    times["onnxruntime"].append(t_ort)
            diff = float(np.abs(np.array(reply["first_row"]) - outs["pytorch"][0, :len(reply["first_row"])].numpy()).max())
            key = f"embed {batch}x{tokens} threads={threads}"
            results[key] = {k: median(v) for k, v in times.items()}
            results[key]["max_abs_diff_wick_vs_pytorch_row0"] = diff
            print_row(key, results[key], ["pytorch", "onnxruntime"])
        wick.close()


# ---- decoding --------------------------------------------------------------------------------------

def make_llama(path, layers, dtype):
    cfg = transformers.LlamaConfig(hidden_size=2048, num_hidden_layers=layers, num_attention_heads=32,
                                   num_key_value_heads=4, intermediate_size=5632, vocab_size=32000,
                                   max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
                                   tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                                   torch_dtype="float32")
    torch.manual_seed(20240601)
    model = transformers.LlamaForCausalLM(cfg).eval()
    model.generation_config.eos_token_id = None  # 128 tokens always: no stop
    model.save_pretrained(path, safe_serialization=True)
    # The bf16 checkpoint is the f32 one rounded, as model.to(bfloat16) rounds it later.
    half = copy.deepcopy(model).to(dtype)
    half.save_pretrained(path + "-bf16", safe_serialization=True)
    del half
    return model


class TimingStreamer:
    """transformers calls put() with the prompt, then with each new token."""

    def __init__(self):
        self.stamps, self.tokens, self.prompt_seen = [], [], False

    def put(self, value):
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        self.stamps.append(time.perf_counter())
        self.tokens.append(int(value.reshape(-1)[0]))

    def end(self):
        pass


def copy_bandwidth(threads):
    torch.set_num_threads(threads)
    src = torch.ones(256 * 1024 * 1024)
    dst = torch.empty_like(src)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - t0)
    return 2 * src.numel() * 4 / median(times)


def weight_bytes(model):
    return sum(p.numel() * p.element_size() for n, p in model.named_parameters() if "embed_tokens" not in n)


def bench_decode(args, binary, results):
    layers, prompt_len, new = (2, 32, 32) if args.quick else (22, 128, 128)
    threads = args.decode_threads
    bandwidth = copy_bandwidth(threads)
    results["copy bandwidth GB/s"] = bandwidth / 1e9
    print(f"copy bandwidth ({threads} threads, read + write): {bandwidth / 1e9:.2f} GB/s", flush=True)
    base = os.path.join(args.tmp, "tinyllama-shape")
    t0 = time.perf_counter()
    model = make_llama(base, layers, torch.bfloat16)
    print(f"random TinyLlama-shape model, {layers} layers, made and saved in {time.perf_counter() - t0:.0f} s",
          flush=True)
    prompt = np.random.default_rng(3).integers(3, 32000, size=(1, prompt_len), dtype=np.int64)
    for dtype, path in [(torch.float32, base), (torch.bfloat16, base + "-bf16")]:
        model = model.to(dtype)
        torch.set_num_threads(threads)
        wick = WickDriver(binary, "decode", path, threads)
        ids = torch.from_numpy(prompt)
        wick_rates, torch_rates, wick_totals, torch_totals = [], [], [], []
        agree = None
        for run in range(args.runs + 1):
            reply = wick.request([prompt_len, new] + prompt.flatten().tolist())
            settle(args)
            streamer = TimingStreamer()
            t0 = time.perf_counter()
            with torch.inference_mode():
                model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                               min_new_tokens=new, do_sample=False, streamer=streamer, pad_token_id=0)
            total = time.perf_counter() - t0
            settle(args)
            if run == 0:  # warm-up
                agree = sum(a == b for a, b in zip(reply["tokens"], streamer.tokens))
                continue
            wick_rates.append((new - 1) / reply["decode_seconds"])
            wick_totals.append(reply["total_seconds"])
            torch_rates.append((new - 1) / (streamer.stamps[-1] - streamer.stamps[0]))
            torch_totals.append(total)
        wick.close()
        name = "f32" if dtype == torch.float32 else "bf16"
        bound = bandwidth / weight_bytes(model)
        key = f"decode {name} {layers}L prompt={prompt_len} new={new} threads={threads}"
        w, t = median(wick_rates), median(torch_rates)
        results[key] = {"wick tok/s": w, "transformers tok/s": t, "bandwidth bound tok/s": bound,
                        "ratio transformers time / wick time": w / t, "wick / bound": w / bound,
                        "wick total s": median(wick_totals), "transformers total s": median(torch_totals),
                        "greedy tokens equal (of new)": f"{agree}/{new}"}
        print(f"{key}: wick {w:.2f} tok/s, transformers {t:.2f} tok/s (ratio {w / t:.2f}), "
              f"bound {bound:.2f} tok/s (wick at {100 * w / bound:.0f}%); "
              f"totals wick {median(wick_totals):.2f} s, transformers {median(torch_totals):.2f} s; "
              f"tokens equal {agree}/{new}", flush=True)


def print_row(key, r, others):
    parts = [f"wick {1e3 * r['wick']:.2f} ms"]
    for o in others:
        parts.append(f"{o} {1e3 * r[o]:.2f} ms (ratio {r[o] / r['wick']:.2f})")
    print(f"{key}: " + ", ".join(parts) + f"; max |wick - pytorch| {r['max_abs_diff_wick_vs_pytorch_row0']:.1e}",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per case (default 7, 3 with --quick)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", default="1,2", help="thread counts of the embedding cases")
    ap.add_argument("--decode-threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=0.25, help="seconds between contenders (see settle)")
    ap.add_argument("--skip-embed", action="store_true")
    ap.add_argument("--skip-decode", action="store_true")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    args.runs = args.runs or (3 if args.quick else 7)
    args.thread_list = [int(t) for t in args.threads.split(",")]
    binary = os.path.join(ROOT, args.build, "bin", "wick_bench_models")
    if not os.path.exists(binary):
        sys.exit(f"{binary} is missing: cmake --build {args.build} --target wick_bench_models")
    print(f"torch {torch.__version__} ({torch.__config__.parallel_info().splitlines()[0]}), "
          f"transformers {transformers.__version__}, runs {args.runs}", flush=True)
    results = {}
    args.tmp = tempfile.mkdtemp(prefix="wick-models-bench-")
    try:
        if not args.skip_embed:
            bench_embed(args, binary, results)
        if not args.skip_decode:
            bench_decode(args, binary, results)
    finally:
        shutil.rmtree(args.tmp, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
