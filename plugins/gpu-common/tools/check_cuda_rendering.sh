#!/usr/bin/env bash
# The CUDA rendering of the GPU kernel description compiles for the given architectures and its
# PTX assembles (no GPU or driver needed): check_cuda_rendering.sh RENDER NVCC ARCH...
set -euo pipefail
render=$1 nvcc=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$render" cuda > "$work/kernels.cu"
ptxas="$(dirname "$nvcc")/ptxas"
for arch in "$@"; do
  "$nvcc" -arch="$arch" -ptx "$work/kernels.cu" -o "$work/$arch.ptx"
  "$ptxas" -arch="$arch" "$work/$arch.ptx" -o "$work/$arch.cubin"
  echo "ok: $(grep -c '^.visible .entry' "$work/$arch.ptx") kernels compile and assemble for $arch"
done
