#!/usr/bin/env bash
# The device check for a machine with an NVIDIA GPU (the lent H200): build with CUDA, show the
# devices, run the demo strictly on cuda, the test suite, and the conformance suite on cuda.
# Results go to $OUT (default ./gpu-check-out). Meant to finish in a few minutes.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/gpu-check-out}"
build="${WICK_BUILD_DIR:-$root/build-gpu}"
mkdir -p "$out"
exec > >(tee "$out/gpu-check.log") 2>&1

nvidia-smi || echo "nvidia-smi not available"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_WITH_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DWICK_BUILD_BENCH=OFF || exit 1
cmake --build "$build" -j "$(nproc)" || exit 1

"$build/bin/wick" devices --json > "$out/devices.json"; cat "$out/devices.json"
"$build/bin/wick" --device cuda --strict demo > "$out/demo-cuda-strict.txt" 2>&1; echo "strict demo rc=$?"
"$build/bin/wick" --device cuda demo > "$out/demo-cuda.txt" 2>&1; echo "demo rc=$?"
(cd "$build" && ctest --output-on-failure -j 8 > "$out/ctest.txt" 2>&1); echo "ctest rc=$?"
if "$build/bin/wick" conformance --help >/dev/null 2>&1; then
  timeout 300 "$build/bin/wick" conformance --backend cuda,cpu-onednn --report "$out/conformance" \
    > "$out/conformance.txt" 2>&1
  echo "conformance rc=$?"
fi
tail -n 5 "$out"/*.txt
