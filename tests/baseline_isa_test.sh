#!/usr/bin/env bash
# Shipped code assumes no more than baseline x86-64: no -march=native, and AVX only where it is
# chosen at run time by the CPU. Our own binaries may use ymm or zmm registers in two places, both
# called only where the CPU has that ISA: cpu-onednn's per-ISA vector math kernels (functions in
# namespaces vecmath_isa_avx*, plugins/cpu-onednn/src/vector_math_kernels.inc) and quantized dot
# products (namespaces quant_isa_avx*, plugins/cpu-onednn/src/quant_dot_kernels.inc), the 16-bit integer
# matmul rows (namespaces int_isa_avx*, plugins/cpu-onednn/src/matmul_int.cpp), and the AVX2 and
# AVX-512 clones target_clones makes (symbols ending in .avx2 or .avx512f, clang adding .<n>, picked
# by their ifunc resolver when the library loads: plugins/cpu-onednn/src/quant.cpp); other SIMD beyond SSE2
# comes from oneDNN, SLEEF and PoCL, which pick it at run time. Fails naming each binary with an AVX
# register outside those functions, with the first such instructions.
#   baseline_isa_test.sh BINARY...
#   baseline_isa_test.sh --self-check CXX   # builds two objects with CXX and checks the checker
set -u
command -v objdump >/dev/null || { echo "FAILED: objdump (binutils) is needed"; exit 1; }
allowed='vecmath_isa_avx'
allowed_quant='quant_isa_avx'  # cpu-onednn's per-ISA MATMUL_QUANT dot products (quant_dot.cpp)
allowed_int='int_isa_avx'  # cpu-onednn's 16-bit-lane integer matmul rows (matmul_int.cpp)

# Prints "function: instruction" for every ymm/zmm instruction outside the allowed functions, then
# one line "allowed N" with the count inside them. objdump -d labels each function "ADDR <symbol>:".
avx_outside_kernels() {
  objdump -d --no-show-raw-insn "$1" | awk -v allowed="$allowed" -v allowed_quant="$allowed_quant" -v allowed_int="$allowed_int" '
    /^[0-9a-f]+ <.*>:$/ { fn = $2; next }
    /%[yz]mm[0-9]/ { if (index(fn, allowed) > 0 || index(fn, allowed_quant) > 0 || index(fn, allowed_int) > 0 || fn ~ /\.(avx2|avx512f)(\.[0-9]+)?>:$/) n++; else print fn ": " $0 }
    END { print "allowed " n + 0 }'
}

check() {
  local status=0 f out hits
  for f in "$@"; do
    out=$(avx_outside_kernels "$f")
    hits=$(echo "$out" | grep -v '^allowed ')
    if [ -n "$hits" ]; then
      echo "FAILED: $f uses AVX registers outside the dispatched vector math kernels (built for this machine's CPU?):"
      echo "$hits" | head -5
      status=1
    else
      echo "ok: $f is baseline x86-64 ($(echo "$out" | grep '^allowed ' | cut -d' ' -f2) AVX instructions, all in $allowed* kernels or target_clones clones)"
    fi
  done
  return $status
}

if [ "${1:-}" = "--self-check" ]; then
  cxx="${2:?--self-check needs a C++ compiler}"
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  kernel='namespace vecmath_isa_avx2 { void scale(float* p, int n) { for (int i = 0; i < n; ++i) p[i] *= 3.0f; } }'
  stray='void stray_scale(float* p, int n) { for (int i = 0; i < n; ++i) p[i] *= 3.0f; }'
  echo "$kernel" > "$dir/kernel.cpp"
  echo "$kernel $stray" > "$dir/both.cpp"
  for s in kernel both; do
    "$cxx" -O3 -mavx2 -c "$dir/$s.cpp" -o "$dir/$s.o" || exit 1
  done
  check "$dir/kernel.o" >/dev/null || { echo "FAILED: AVX inside $allowed* was refused"; exit 1; }
  # A target_clones function built at baseline: its AVX2 clone is allowed.
  echo '__attribute__((target_clones("default", "avx2"))) void cloned(float* p, int n) { for (int i = 0; i < n; ++i) p[i] *= 3.0f; }' > "$dir/clones.cpp"
  "$cxx" -O3 -c "$dir/clones.cpp" -o "$dir/clones.o" || exit 1
  grep -q "allowed 0" <<<"$(avx_outside_kernels "$dir/clones.o")" && { echo "FAILED: the target_clones self-check has no AVX instruction"; exit 1; }
  check "$dir/clones.o" >/dev/null || { echo "FAILED: AVX in a target_clones clone was refused"; exit 1; }
  grep -q "allowed 0" <<<"$(avx_outside_kernels "$dir/kernel.o")" && { echo "FAILED: the self-check kernel has no AVX instruction"; exit 1; }
  check "$dir/both.o" >/dev/null && { echo "FAILED: AVX outside $allowed* (stray_scale) was not caught"; exit 1; }
  echo "ok: the checker allows AVX in $allowed* kernels and target_clones clones and catches it elsewhere"
  exit 0
fi

check "$@"
