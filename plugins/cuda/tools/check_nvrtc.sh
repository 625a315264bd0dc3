#!/usr/bin/env bash
# Every kernel unit, rendered to CUDA C, compiles with NVRTC to PTX for the first (lowest)
# architecture, and that PTX assembles with ptxas for each architecture (no GPU or driver needed):
# check_nvrtc.sh NVRTC_CHECK PTXAS ARCH...
# One NVRTC pass, not one per architecture: the rendering has no architecture-dependent code (no
# __CUDA_ARCH__), so NVRTC's front end sees the same program for each; ptxas is where the
# architectures differ (registers, instruction selection), and PTX is forward-compatible. This
# halves the check's NVRTC time (about 40 s of CI).
set -euo pipefail
check=$1 ptxas=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
first=$1
"$check" "$work" "$first"
for arch in "$@"; do
  kernels=0
  for ptx in "$work"/*.sm_"$first".ptx; do
    "$ptxas" -arch="sm_$arch" "$ptx" -o /dev/null
    kernels=$((kernels + $(grep -c '^.visible .entry' "$ptx")))
  done
  echo "ok: $kernels kernels compile (NVRTC) and assemble (ptxas) for sm_$arch"
done
