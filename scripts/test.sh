#!/usr/bin/env bash
# The test job (CI runs it: .ci/run): set up, build, check the layout's sizes, run the whole test
# suite — on this CPU as oneDNN sees it, then with oneDNN held to AVX2 and to SSE4.1, so that a
# machine with AVX-512 also checks the code paths an AVX2-only or older CPU takes (no bf16 kernels
# in oneDNN below AVX-512, other JIT kernels) — then fuzzing, the suite under ASan+UBSan and the
# threaded tests under TSan.
# Each stage prints the time it took, and after each ctest pass every test's time is compared with
# its timeout (scripts/ctest_budget.py: a test over half of its timeout fails the job).
# The long checks have scripts of their own and a short version here: 5-epoch training
# (scripts/train-check.sh; ctest runs 1 epoch), 30-minute fuzzing (scripts/fuzz.sh 1800; here
# WICK_CI_FUZZ_SECONDS, default 12, per target).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
job_start=$SECONDS
stage_start=$SECONDS
stage() {  # stage NAME: prints how long the stage before took, names the next
  if [ -n "${stage_name:-}" ]; then
    echo "test: stage '$stage_name' took $((SECONDS - stage_start)) s"
  fi
  stage_name="$1"
  stage_start=$SECONDS
  [ -n "$1" ] && echo "test: stage '$1'"
  return 0
}

stage "set-up and build"
"$root/scripts/setup.sh"

stage "sizes (files <= 800 lines, functions <= 80)"
"$root/scripts/check_sizes.sh"

cd "$build"
# The lower-ISA passes leave out what does not depend on the CPU's ISA (label isa-independent:
# compiling the CUDA rendering, the packages, the plugin checker, training).
# A pass whose cap is not below this CPU's best ISA would repeat the native pass (an AVX2-only CPU
# held to AVX2 takes the same paths), so it is skipped, saying so.
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
below_native() {  # below_native ISA: true when this CPU has an ISA above ISA
  case "$1" in
    AVX2) [[ "$flags" == *" avx512f "* ]] ;;
    SSE41) [[ "$flags" == *" avx "* ]] ;;
    *) return 0 ;;
  esac
}
for isa in "" AVX2 SSE41; do
  if [ -n "$isa" ] && ! below_native "$isa"; then
    echo "test: no ctest pass with ONEDNN_MAX_CPU_ISA=$isa: this CPU has nothing above $isa, so the native pass took its paths"
    continue
  fi
  stage "ctest with ONEDNN_MAX_CPU_ISA=${isa:-(unset: every ISA this CPU has)}"
  select=()
  # isa-independent: build and tool checks; isa-neutral: tests that take no CPU-chosen path;
  # array-api: the Array API suite, which checks the Python API's semantics (the kernels under it
  # are the C++ suite's, run in every pass).
  [ -n "$isa" ] && select=(-LE "isa-independent|isa-neutral|array-api")
  junit="$build/ctest-${isa:-native}.xml"
  ONEDNN_MAX_CPU_ISA="$isa" ctest --output-on-failure -j "$(nproc)" --output-junit "$junit" "${select[@]}"
  python3 "$root/scripts/ctest_budget.py" "$build" "$junit" "ONEDNN_MAX_CPU_ISA=${isa:-native}"
done

# The Python package as a user installs it (issue 27): one pip command in a fresh venv builds the
# wheel from this checkout (scikit-build-core over the project's CMake, without tests and
# benchmarks; nanobind and scikit-build-core come from PyPI), then, from another directory, the
# package imports, finds its plugins inside itself and computes a hand-worked value.
stage "the Python package: pip install ./python in a fresh venv"
wheel_venv="$build/wheel-venv"
rm -rf "$wheel_venv"
/usr/bin/python3 -m venv "$wheel_venv"
# ccache (setup.sh): the wheel's compiles are the build's, so they come from the cache — given the
# build's compilers by the same names (scikit-build-core would take x86_64-linux-gnu-g++, the same
# compiler under a name ccache hashes differently).
compiler() { sed -n "s/^CMAKE_$1_COMPILER:FILEPATH=//p" "$build/CMakeCache.txt"; }
CMAKE_ARGS="-DCMAKE_C_COMPILER=$(compiler C) -DCMAKE_CXX_COMPILER=$(compiler CXX) \
-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache" \
  "$wheel_venv/bin/pip" install -q "$root/python"
(cd / && WICK_PLUGIN_PATH= "$wheel_venv/bin/python" "$root/python/tests/installed_check.py")

# Hostile input (issue 14): every libFuzzer target replays its regression inputs and fuzzes from its
# seeds for WICK_CI_FUZZ_SECONDS (clang's ASan+UBSan), then the suite's CI subset runs under
# ASan+UBSan (scripts/sanitize.sh). A finding fails the job.
stage "fuzzing (${WICK_CI_FUZZ_SECONDS:-12} s per target)"
"$root/scripts/fuzz.sh" "${WICK_CI_FUZZ_SECONDS:-12}"

stage "the ASan+UBSan suite"
asan_build="${WICK_SANITIZE_BUILD_DIR:-$root/build-asan}"
WICK_SANITIZE_BUILD_DIR="$asan_build" "$root/scripts/sanitize.sh" asan --output-junit "$asan_build/ctest-asan.xml"
python3 "$root/scripts/ctest_budget.py" "$asan_build" "$asan_build/ctest-asan.xml" "ASan+UBSan"

# Threads (issue 21): the host's per-device locks, a concurrent device without them (cpu-onednn),
# eight threads on one device per backend and backward from eight threads, under TSan
# (scripts/sanitize.sh tsan builds only what those tests need: about 2 minutes).
stage "the TSan threads suite"
tsan_build="$root/build-tsan"
WICK_SANITIZE_BUILD_DIR="$tsan_build" "$root/scripts/sanitize.sh" tsan --output-junit "$tsan_build/ctest-tsan.xml"
python3 "$root/scripts/ctest_budget.py" "$tsan_build" "$tsan_build/ctest-tsan.xml" "TSan"

stage ""
echo "test: the whole job took $((SECONDS - job_start)) s"
