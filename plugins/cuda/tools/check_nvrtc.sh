#!/usr/bin/env bash
# Every kernel unit, rendered to CUDA C, compiles with NVRTC to PTX and the PTX assembles with
# ptxas, for each architecture (no GPU or driver needed): check_nvrtc.sh NVRTC_CHECK PTXAS ARCH...
set -euo pipefail
check=$1 ptxas=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$check" "$work" "$@"
for arch in "$@"; do
  kernels=0
  for ptx in "$work"/*.sm_"$arch".ptx; do
    "$ptxas" -arch="sm_$arch" "$ptx" -o /dev/null
    kernels=$((kernels + $(grep -c '^.visible .entry' "$ptx")))
  done
  echo "ok: $kernels kernels compile (NVRTC) and assemble (ptxas) for sm_$arch"
done
