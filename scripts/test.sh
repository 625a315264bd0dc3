#!/usr/bin/env bash
# The test job: set up, build, run the whole test suite — on this CPU as oneDNN sees it, then with
# oneDNN held to AVX2 and to SSE4.1, so that a machine with AVX-512 also checks the code paths an
# AVX2-only or older CPU takes (no bf16 kernels in oneDNN below AVX-512, other JIT kernels).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
cd "$build"
# The lower-ISA passes leave out what does not depend on the CPU's ISA (label isa-independent:
# compiling the CUDA rendering, which takes a minute).
for isa in "" AVX2 SSE41; do
  echo "test: ctest with ONEDNN_MAX_CPU_ISA=${isa:-(unset: every ISA this CPU has)}"
  start=$SECONDS
  select=()
  [ -n "$isa" ] && select=(-LE isa-independent)
  ONEDNN_MAX_CPU_ISA="$isa" ctest --output-on-failure -j "$(nproc)" "${select[@]}"
  echo "test: that pass took $((SECONDS - start)) s"
done
# Hostile input (issue 14): every libFuzzer target replays its regression inputs and fuzzes from its
# seeds for WICK_CI_FUZZ_SECONDS (clang's ASan+UBSan), then the suite's CI subset runs under
# ASan+UBSan (scripts/sanitize.sh). A finding fails the job.
start=$SECONDS
"$root/scripts/fuzz.sh" "${WICK_CI_FUZZ_SECONDS:-30}"
echo "test: fuzzing took $((SECONDS - start)) s"
start=$SECONDS
"$root/scripts/sanitize.sh" asan
echo "test: the ASan+UBSan suite took $((SECONDS - start)) s"
