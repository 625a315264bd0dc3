#!/usr/bin/env bash
# Packs what the GPU machine's device check (scripts/gpu-check.sh) runs, built here: the wick CLI,
# the conformance worker, wick_bench_cuda, the NCCL check (and libwick-distributed-nccl.so, which
# opens the GPU machine's own libnccl: at 218 MB it cannot travel), libwick and the layers'
# libraries (the CLI and the worker link libwick-onnx), the cpu-onednn and cuda plugins, the shared libraries they need that the GPU
# machine lacks (oneDNN, libgomp, the OpenCL ICD loader oneDNN links, toml++, Boost.Filesystem),
# and the ONNX node tests. The GPU machine has CUDA, CMake, ninja and PyTorch but none of the Debian
# -dev packages and no network, and at most 64 MiB travels: everything goes into one xz archive,
# gpu-carry/wick-gpu.tar.xz (about 14 MB).
#
#   scripts/gpu-package.sh            # build dir: $WICK_BUILD_DIR or build/ (needs the CUDA toolkit)
# then, with the device tool:  run(command="bash scripts/gpu-check.sh", carry=["gpu-carry"])
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
cmake --build "$build" -j "$(nproc)" --target wick wick-conformance-worker wick-cuda wick-cpu-onednn wick_bench_cuda \
  wick-distributed-nccl-check wick_distributed_nccl
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/wick/plugins" "$stage/share"
cp "$build/bin/wick" "$build/bin/wick-conformance-worker" "$build/bin/wick_bench_cuda" \
   "$build/bin/wick-distributed-nccl-check" "$stage/bin/"
cp -P "$build"/lib/libwick*.so* "$stage/lib/"
for p in cpu-onednn cuda; do
  cp "$build/lib/wick/plugins/libwick-$p.so" "$build/lib/wick/plugins/$p.wick-plugin.toml" \
     "$stage/lib/wick/plugins/"
done
# The non-system libraries the binaries and plugins load (glibc and libstdc++ are on every Linux).
for lib in $(ldd "$stage"/bin/* "$stage"/lib/libwick*.so.* "$stage"/lib/wick/plugins/*.so 2>/dev/null |
             awk '/=> \// {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|libdl.so*|librt.so*|ld-linux*|libwick*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
onnx=/usr/share/libonnx-testdata/data/node
[[ -d "$onnx" ]] && cp -r "$onnx" "$stage/share/onnx-node"
mkdir -p "$root/gpu-carry"
tar -C "$stage" -cf - . | xz -T"$(nproc)" -6 > "$root/gpu-carry/wick-gpu.tar.xz"
echo "gpu-carry/wick-gpu.tar.xz: $(du -h "$root/gpu-carry/wick-gpu.tar.xz" | cut -f1)"
tar -tJf "$root/gpu-carry/wick-gpu.tar.xz" | grep -v '^./share/' | sed 's/^/  /'
