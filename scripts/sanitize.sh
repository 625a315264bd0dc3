#!/usr/bin/env bash
# The test suite under sanitizers, in its own build directory (clang, -O0 -g, no CUDA, no benchmarks):
#   scripts/sanitize.sh asan [ctest args...]   ASan+UBSan: build-asan/, then ctest on the subset below
#   scripts/sanitize.sh tsan [ctest args...]   TSan: build-tsan/, eight threads on one device for each
#                                              backend (cpu-onednn concurrent, opencl behind the
#                                              host's per-device lock), the per-device locking
#                                              tests (test_concurrency), eight threads running
#                                              backward into shared parameters, and 8 threads
#                                              generating with one shared model (test_generate)
# A sanitizer report aborts the process, so the test it happens in fails; its report is in ctest's
# output (--output-on-failure). Workers and plugin hosts are built the same way, and their
# stderr (a report included) reaches the suite's workers.log and the failing test's output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kind="${1:?usage: scripts/sanitize.sh asan|tsan [ctest args...]}"
shift
case "$kind" in
  asan) sanitize="address,undefined" ;;
  tsan) sanitize="thread" ;;
  *) echo "sanitize: unknown kind '$kind' (asan or tsan)" >&2; exit 2 ;;
esac
build="${WICK_SANITIZE_BUILD_DIR:-$root/build-$kind}"
# clang at -O0: the quickest to build (the suite's tensors are small, so speed at run time matters
# less), and the compiler the fuzz targets use.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g" \
  -DCMAKE_C_FLAGS_DEBUG="-O0 -g" -DWICK_SANITIZE="$sanitize" -DWICK_WERROR=OFF \
  -DWICK_WITH_CUDA=OFF -DWICK_BUILD_BENCH=OFF -DWICK_PYTHON=OFF -DWICK_MODELS_DIR="${WICK_BUILD_DIR:-$root/build}/models" >/dev/null
targets=()  # ASan: everything; TSan: the plugins and the test programs of the threaded tests
[ "$kind" = tsan ] && targets=(--target wick-cpu-onednn wick-opencl test_devices test_autograd test_concurrency test_generate)
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
cd "$build"
# OpenMP regions run on one thread: libgomp is not instrumented (TSan would report its own
# synchronisation as races), and the suite's threads are the host's, not the kernels'.
export OMP_NUM_THREADS=1
supp="$root/scripts/sanitizers"
if [ "$kind" = asan ]; then
  # Signals pass through, so that a plugin crash is still reported by the host as one; no
  # alternate signal stacks (the host's crash reporter installs its own); dynamic TLS is not
  # intercepted (clang 14's LeakSanitizer on glibc 2.36 records a bogus range for threads oneDNN
  # starts and crashes in its exit-time tracer).
  export ASAN_OPTIONS="use_sigaltstack=0:intercept_tls_get_addr=0:handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=1:suppressions=$supp/asan.supp"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # Left out: the tests whose fixture plugins misbehave on purpose (writes outside an output,
  # leaks, crashes: the sanitizer would report the fixture, not Wick), the training run (minutes
  # at -O1), the CUDA rendering check, the hostile ONNX folders (they run the CLI under an
  # address-space limit, which ASan's shadow memory cannot start under) and the million-tensor
  # safetensors header and the other readers' linear-time tests (timings, meaningless at -O0 under
  # ASan; the readers are fuzzed under ASan with many-entry seeds, and their other tests run here)
  # and the baseline-ISA scan of the shipped objects (it disassembles binaries: no Wick code runs),
  # and ONNX 1.23.2's node tests (3768 folder runs, about 3 s natively; their folders are made by
  # setup.sh in the main build only, and the importer is fuzzed under ASan), and the tests that run
  # ranks under mpirun (Open MPI's own start-up allocations, never freed, are not checked here; the
  # distributed layer's one-rank test, without MPI, runs).
  exec ctest --output-on-failure -j "$(nproc)" -LE "isa-independent" \
    -E "training_examples|nvrtc|conformance_crash_and_hang|conformance_workers_die|plugin_check_verdicts|oob|crash|conformance_hostile_onnx_folders|conformance_onnx_node_tests|million tensors|linear time|shipped_code_is_baseline|distributed_(two_ranks|three_ranks|data_parallel|resume|fault|example)" "$@"
else
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  # The host's threads only: kernels that split work with OpenMP are not checked here (the OpenMP
  # runtime is not instrumented, so TSan cannot see its synchronisation).
  exec ctest --output-on-failure -j "$(nproc)" -R "eight threads|one device are serialised|CAP_CONCURRENT|cpu-onednn declares its device concurrent|8 threads generating" "$@"
fi
