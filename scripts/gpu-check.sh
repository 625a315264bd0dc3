#!/usr/bin/env bash
# The device check on the lent GPU machine (NVIDIA H200; CUDA, CMake, ninja, PyTorch; no Debian
# -dev packages, no network). It builds nothing: scripts/gpu-package.sh packed the binaries here,
# and the device tool carries gpu-carry/ along:
#
#   run(command="bash scripts/gpu-check.sh", carry=["gpu-carry"], timeout_s=480)
#
# Runs `wick devices`, the strict demo on cuda, the conformance suite on cuda (golden, differential
# against cpu-onednn, ONNX), `wick generate` on the tiny Llama fixture in strict mode on cuda (its
# text against transformers' greedy text, tests/data/generate), the NCCL check (every collective and
# dtype on CUDA tensors, one rank), and the GPU benchmarks (wick_bench_cuda, and bench/gpu_reference.py
# for torch.matmul), each with a time limit so that the whole fits one call of 8 minutes. Results
# go to $OUT (default ./gpu-check-out): log, devices, demo, conformance reports, bench.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/gpu-check-out}"
mkdir -p "$out"
exec > >(tee "$out/gpu-check.log") 2>&1
echo "== $(date -u +%FT%TZ) gpu-check at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || echo "nvidia-smi failed"

pkg="$(mktemp -d)"
tar -C "$pkg" -xJf "$root/gpu-carry/wick-gpu.tar.xz" || { echo "no gpu-carry/wick-gpu.tar.xz: run scripts/gpu-package.sh first"; exit 1; }
export LD_LIBRARY_PATH="$pkg/lib:${LD_LIBRARY_PATH:-}"
export XDG_CACHE_HOME="$pkg/cache"  # the kernel units' cache: cold in the first command, then warm
wick="$pkg/bin/wick"

echo "== wick devices"
timeout 60 "$wick" devices | tee "$out/devices.txt"
timeout 60 "$wick" devices --json > "$out/devices.json"

echo "== strict demo on cuda"
timeout 120 "$wick" --device cuda --strict demo > "$out/demo-cuda-strict.txt" 2>&1
echo "strict demo rc=$?"; tail -n 3 "$out/demo-cuda-strict.txt"

echo "== conformance on cuda (golden, differential against cpu-onednn, ONNX)"
jobs=$(( $(nproc) > 8 ? 8 : $(nproc) ))
timeout 240 "$wick" conformance --backend cuda --reference cpu-onednn --jobs "$jobs" \
  --golden-dir "$root/conformance/golden" --onnx-dir "$pkg/share/onnx-node" \
  --report "$out/conformance" > "$out/conformance.txt" 2>&1
echo "conformance rc=$?"; grep -E "^  cuda " "$out/conformance.txt"

echo "== models on cuda (strict): the tiny Llama's streamed greedy text against transformers'"
tiny="$root/tests/data/generate/tiny-llama"
want=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['text']; print(t['prompt']); print(len(t['new'])); print(t['text'])" "$tiny/expected.json")
prompt=$(sed -n 1p <<<"$want"); count=$(sed -n 2p <<<"$want"); text=$(sed -n 3p <<<"$want")
for dev in cpu-onednn cuda; do
  got=$(timeout 120 "$wick" --device "$dev" --strict generate --model "$tiny" --prompt "$prompt" --max-tokens "$count" \
        2> "$out/generate-$dev.err")
  rc=$?
  if [ "$rc" = 0 ] && [ "$got" = "$text" ]; then echo "generate on $dev: equal to transformers' greedy text"
  else echo "generate on $dev: rc=$rc, got '$got', want '$text'"; tail -n 3 "$out/generate-$dev.err"; fi
done

echo "== NCCL: the collectives of CUDA tensors, every dtype, one rank (distributed/tests/nccl_check.cpp)"
# The module opens libnccl.so.2 from the loader's path or the CUDA toolkit; else PyTorch's copy.
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2' && ! ls /usr/local/cuda/lib*/libnccl.so.2 >/dev/null 2>&1; then
  torch_nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
  [ -f "$torch_nccl" ] && export WICK_NCCL_LIBRARY="$torch_nccl"
fi
WICK_DISTRIBUTED_NCCL=on timeout 120 "$pkg/bin/wick-distributed-nccl-check" cuda > "$out/nccl.txt" 2>&1
echo "nccl check rc=$? (0: all hold; 1: a check failed; 2: no CUDA device)"; grep -v "^ok " "$out/nccl.txt" | tail -n 25

echo "== benchmarks"
timeout 90 "$pkg/bin/wick_bench_cuda" > "$out/bench-wick.jsonl" 2> "$out/bench-wick.err"
echo "wick_bench_cuda rc=$?"; cat "$out/bench-wick.jsonl" "$out/bench-wick.err"
timeout 90 python3 "$root/bench/gpu_reference.py" "$out/bench-wick.jsonl" > "$out/bench.md" 2>&1
echo "gpu_reference rc=$?"; cat "$out/bench.md"
echo "== done $(date -u +%FT%TZ)"
