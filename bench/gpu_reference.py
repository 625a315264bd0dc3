#!/usr/bin/env python3
"""The GPU references of scripts/gpu-check.sh: torch.matmul (cuBLAS) on the same shapes and dtypes
as wick_bench_cuda, medians of 9 after a warm-up, one JSON object per case on stdout. Then, given
wick_bench_cuda's output file, prints the ratio table (Markdown).

    python3 bench/gpu_reference.py [wick.jsonl]
"""
import json
import sys
import time


def median(run):
    import torch
    run()
    torch.cuda.synchronize()
    t = []
    for _ in range(9):
        t0 = time.perf_counter()
        run()
        torch.cuda.synchronize()
        t.append(time.perf_counter() - t0)
    return sorted(t)[len(t) // 2]


def references():
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # Wick's f32 matmul does not use TF32 either
    out = {}
    n = 8192
    for name, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        a = torch.rand(n, n, device="cuda", dtype=dtype)
        b = torch.rand(n, n, device="cuda", dtype=dtype)
        s = median(lambda: torch.matmul(a, b))
        out["matmul_%s_8192" % name] = s
        print(json.dumps({"case": "matmul_%s_8192/torch" % name, "seconds": s,
                          "tflops": 2 * n ** 3 / s / 1e12}), flush=True)
    return out


def main():
    refs = references()
    if len(sys.argv) < 2:
        return
    wick = {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if line.startswith("{"):
                r = json.loads(line)
                wick[r["case"]] = r
    print("\n| case | Wick | reference | ratio | target |")
    print("|---|---|---|---|---|")
    for name in ("bf16", "f32"):
        case = "matmul_%s_8192" % name
        if case + "/wick" in wick:
            w = wick[case + "/wick"]["seconds"]
            target = ">= 0.9" if name == "bf16" else "(none)"
            print("| %s | %.2f ms | torch.matmul %.2f ms | %.2f | %s |" % (case, w * 1e3, refs[case] * 1e3,
                                                                       refs[case] / w, target))
    w, c = wick.get("add_f32_268435456/wick"), wick.get("add_f32_268435456/d2d_copy")
    if w and c:
        print("| add_f32_268435456 | %.0f GB/s | D2D copy %.0f GB/s | %.2f | >= 0.8 |" % (
            w["gbytes_per_s"], c["gbytes_per_s"], w["gbytes_per_s"] / c["gbytes_per_s"]))


if __name__ == "__main__":
    main()
