#!/usr/bin/env python3
"""Wick's quantized decoding against llama.cpp on the same GGUF files, in one run (issue 26, item 5).

  bench/gguf_vs_llama_cpp.py [--build build] [--runs 3] [--threads 1,2] [--types Q4_0,Q8_0,Q4_K_M]
                             [--work DIR] [--quick] [--out FILE]

The model: a random-weight model of TinyLlama-1.1B's shape (hidden 2048, 22 layers, 32 heads, 4
KV heads, intermediate 5632, vocabulary 32000; numpy seed 0, normal(0, 0.02)), written to GGUF by
the `gguf` package: Q4_0 and Q8_0 quantized by gguf.quants (every matrix), Q4_K_M by llama.cpp's
llama_model_quantize from an F16 file (its mix: Q4_K, Q6_K for the head, half the v and down
projections). The weights' values do not change the speed. Its tokenizer is a placeholder (the
prompt is given as ids).

Each run, for each thread count and file, in turn: llama.cpp (llama-cpp-python 0.3.36, pinned:
it builds llama.cpp from source; n_batch 512, an f16 KV cache, its default) evaluates a
128-token prompt (random ids, fixed) and then decodes 128 tokens greedily, one llama_decode
each; then Wick does the same through build/bin/wick_bench_models decode (a process per file and
thread count, kept alive, so neither side reloads; greedy generate() without a stop token).
Prompt processing tokens/s = 128 / (time to the first new token); decoding tokens/s = 127 / (time
from the first new token to the last). Medians over the runs; ratio = Wick / llama.cpp tokens/s
(above 1: Wick is faster). The bandwidth bound: the bytes one decoded token reads (every tensor
but the token embedding) over the copy bandwidth on the same threads (numpy copies of 1 GiB,
one slice per thread, counted STREAM's way: read + written).

The environment (llama.cpp built from source, ~20 minutes on one core):
  python3 -m venv /tmp/llv && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON \\
      -DGGML_F16C=ON -DLLAMA_CURL=OFF" /tmp/llv/bin/pip install numpy gguf==0.19.0 \\
      llama-cpp-python==0.3.36
  flock /tmp/wick-build.lock /tmp/llv/bin/python bench/gguf_vs_llama_cpp.py --work /tmp/gguf-bench
--quick: 2 layers, 32 prompt and 32 new tokens, 1 run. Wick rounds x to 8 bits before its quantized
matmuls, as llama.cpp does (models::LoadOptions::round_activations, the default);
--exact-activations measures it with x exact (WICK_EXACT_ACTIVATIONS=1 for wick_bench_models). Not a test: the numbers depend on the
machine; run it under the build lock so builds do not run beside it.
"""
import argparse
import ctypes
import json
import os
import pathlib
import statistics
import subprocess
import sys
import threading
import time

import gguf
import llama_cpp
import numpy as np

assert llama_cpp.__version__ == "0.3.36", llama_cpp.__version__
ROOT = pathlib.Path(__file__).resolve().parent.parent

SHAPE = dict(hidden=2048, layers=22, heads=32, kv_heads=4, ffn=5632, vocab=32000, ctx=2048)


def byte_tokens():
    """GPT-2's byte-to-unicode table: the 256 byte tokens of a byte-level BPE."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write_model(path, s, qtype, tensors):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(s["hidden"] // s["heads"])
    tokens = byte_tokens() + ["\u0120t"]
    tokens += [f"<unused{i}>" for i in range(s["vocab"] - len(tokens))]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.NORMAL] * len(tokens))
    w.add_token_merges(["\u0120 t"])
    w.add_bos_token_id(0)
    for name, a in tensors:
        if a.ndim == 2 and qtype is not None:
            w.add_tensor(name, gguf.quants.quantize(a, qtype), raw_dtype=qtype)
        elif a.ndim == 2:
            w.add_tensor(name, a.astype(np.float16))
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make_models(work, s, types):
    work.mkdir(parents=True, exist_ok=True)
    want = {t: work / f"tinyllama-shape-{t}-L{s['layers']}.gguf" for t in types}
    if all(p.exists() for p in want.values()):
        return want
    rng = np.random.default_rng(0)
    h, d = s["hidden"], s["hidden"] // s["heads"]
    normal = lambda *shape: (rng.standard_normal(shape, dtype=np.float32) * 0.02)
    tensors = [("token_embd.weight", normal(s["vocab"], h))]
    for i in range(s["layers"]):
        p = f"blk.{i}."
        tensors += [(p + "attn_norm.weight", np.ones(h, np.float32)),
                    (p + "attn_q.weight", normal(h, h)), (p + "attn_k.weight", normal(s["kv_heads"] * d, h)),
                    (p + "attn_v.weight", normal(s["kv_heads"] * d, h)), (p + "attn_output.weight", normal(h, h)),
                    (p + "ffn_norm.weight", np.ones(h, np.float32)), (p + "ffn_gate.weight", normal(s["ffn"], h)),
                    (p + "ffn_up.weight", normal(s["ffn"], h)), (p + "ffn_down.weight", normal(h, s["ffn"]))]
    tensors += [("output_norm.weight", np.ones(h, np.float32)), ("output.weight", normal(s["vocab"], h))]
    qtypes = {"Q4_0": gguf.GGMLQuantizationType.Q4_0, "Q8_0": gguf.GGMLQuantizationType.Q8_0}
    for t, path in want.items():
        if path.exists():
            continue
        print(f"writing {path.name}", file=sys.stderr, flush=True)
        if t in qtypes:
            write_model(path, s, qtypes[t], tensors)
        elif t == "Q4_K_M":
            f16 = work / "f16.gguf"
            write_model(f16, s, None, tensors)
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
            params.nthread = os.cpu_count()
            assert llama_cpp.llama_model_quantize(str(f16).encode(), str(path).encode(),
                                                  ctypes.byref(params)) == 0
            f16.unlink()
        else:
            sys.exit(f"unknown type {t}")
    return want


def decode_bytes(path):
    """Bytes one decoded token reads: every tensor but the token embedding (one row of it)."""
    r = gguf.GGUFReader(str(path))
    return sum(int(t.n_bytes) for t in r.tensors if t.name != "token_embd.weight")


def copy_bandwidth(threads, reps=5):
    n = (1 << 30) // 4
    src, dst = np.ones(n, np.float32), np.empty(n, np.float32)
    parts = np.array_split(np.arange(n), threads)
    bounds = [(int(p[0]), int(p[-1]) + 1) for p in parts]
    best = 0.0
    for _ in range(reps):
        ts = [threading.Thread(target=lambda a, b: np.copyto(dst[a:b], src[a:b]), args=bd) for bd in bounds]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        best = max(best, 2 * n * 4 / (time.perf_counter() - t0))
    return best


class LlamaCpp:
    def __init__(self, path, threads):
        self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_batch=512, n_threads=threads,
                                   n_threads_batch=threads, verbose=False)

    def run(self, prompt, new):
        llm = self.llm
        llm.reset()
        llm._ctx.memory_clear(True) if hasattr(llm._ctx, "memory_clear") else None
        t0 = time.perf_counter()
        llm.eval(prompt)
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        first = time.perf_counter()
        for _ in range(new - 1):
            llm.eval([tok])
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        last = time.perf_counter()
        return first - t0, last - first


class Wick:
    def __init__(self, binary, path, threads, exact):
        env = dict(os.environ, WICK_EXACT_ACTIVATIONS="1") if exact else None
        self.p = subprocess.Popen([str(binary), "decode", "--model", str(path), "--threads", str(threads)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = json.loads(self.p.stdout.readline())
        assert ready.get("ready") == "decode", ready

    def run(self, prompt, new):
        self.p.stdin.write(f"{len(prompt)} {new} " + " ".join(map(str, prompt)) + "\n")
        self.p.stdin.flush()
        j = json.loads(self.p.stdout.readline())
        assert len(j["tokens"]) == new, j
        return j["prefill_seconds"], j["decode_seconds"]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--types", default="Q4_0,Q8_0,Q4_K_M")
    ap.add_argument("--work", default="/tmp/wick-gguf-bench")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--exact-activations", action="store_true",
                    help="Wick with x not rounded to 8 bits (LoadOptions::round_activations off)")
    a = ap.parse_args()
    s = dict(SHAPE)
    prompt_len = new = 128
    if a.quick:
        s["layers"], prompt_len, new, a.runs = 2, 32, 32, 1
    threads = [int(t) for t in a.threads.split(",")]
    types = a.types.split(",")
    files = make_models(pathlib.Path(a.work), s, types)
    prompt = np.random.default_rng(1).integers(300, s["vocab"], prompt_len).tolist()
    binary = pathlib.Path(a.build) / "bin" / "wick_bench_models"
    results = {}
    for t in threads:
        bw = copy_bandwidth(t)
        for ty in types:
            path = files[ty]
            lc, wk = LlamaCpp(path, t), Wick(binary, path, t, a.exact_activations)
            lc.run(prompt[:8], 4), wk.run(prompt[:8], 4)  # warm-up
            rows = {"llama.cpp": [], "wick": []}
            for r in range(a.runs):
                rows["llama.cpp"].append(lc.run(prompt, new))
                rows["wick"].append(wk.run(prompt, new))
                print(f"{ty} threads {t} run {r}: llama.cpp {rows['llama.cpp'][-1]}, wick {rows['wick'][-1]}",
                      file=sys.stderr, flush=True)
            wk.close()
            del lc
            med = {k: (prompt_len / statistics.median(x[0] for x in v),
                       (new - 1) / statistics.median(x[1] for x in v)) for k, v in rows.items()}
            bound = bw / decode_bytes(path)
            results[f"{ty} t{t}"] = {"type": ty, "threads": t, "bandwidth_gbs": bw / 1e9,
                                     "bound_tokens_s": bound, "llama.cpp": med["llama.cpp"],
                                     "wick": med["wick"], "runs": rows}
    lines = ["| file | threads | llama.cpp pp tok/s | Wick pp tok/s | pp ratio | llama.cpp decode tok/s "
             "| Wick decode tok/s | decode ratio | Wick decode / bound |",
             "|---|---|---|---|---|---|---|---|---|"]
    for k, v in results.items():
        (lpp, ldec), (wpp, wdec) = v["llama.cpp"], v["wick"]
        lines.append(f"| {v['type']} | {v['threads']} | {lpp:.1f} | {wpp:.1f} | {wpp / lpp:.2f} | {ldec:.2f} "
                     f"| {wdec:.2f} | {wdec / ldec:.2f} | {wdec / v['bound_tokens_s']:.2f} "
                     f"(bound {v['bound_tokens_s']:.1f}) |")
    print("\n".join(lines))
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
