#!/usr/bin/env bash
# Shipped code assumes no more than baseline x86-64: no -march=native, no AVX anywhere in our own
# binaries (SIMD beyond SSE2 comes from oneDNN and PoCL, which pick it at run time). Fails naming
# each binary that uses a ymm or zmm register, with the first such instructions.
#   baseline_isa_test.sh BINARY...
set -u
command -v objdump >/dev/null || { echo "FAILED: objdump (binutils) is needed"; exit 1; }
status=0
for f in "$@"; do
  hits=$(objdump -d --no-show-raw-insn "$f" | grep -E '%[yz]mm[0-9]')
  if [ -n "$hits" ]; then
    echo "FAILED: $f uses AVX registers (built for this machine's CPU?):"
    echo "$hits" | head -5
    status=1
  else
    echo "ok: $f is baseline x86-64"
  fi
done
exit $status
