#!/usr/bin/env bash
# Builds wick_bench, runs every benchmark (Wick next to raw oneDNN and plain loops, same process,
# same threads) with repetitions, and prints the Wick / reference ratio table (bench/report.py).
#
#   scripts/bench.sh                      # build dir: $WICK_BUILD_DIR or build/
#   WICK_BENCH_THREADS=1 scripts/bench.sh # threads for Wick and the references (default: cores)
#   scripts/bench.sh --benchmark_filter=matmul   # extra arguments go to wick_bench
#   scripts/bench.sh --opencl             # the OpenCL device: wick_bench_opencl (CLBlast, the
#                                         # driver's buffer copy) and bench/first_op.sh
#   scripts/bench.sh --threads            # requests/s from 1, 2, 4 host threads on one CPU device,
#                                         # against the same behind one lock (bench/threads.cpp)
#   scripts/bench.sh --libtorch           # per-op overhead and a batch-1 MLP against libtorch in
#                                         # the same process (bench/bench_libtorch.cpp; needs
#                                         # Debian's libtorch-dev and, for its BLAS,
#                                         # libopenblas0-pthread)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
if [[ "${1:-}" == "--threads" ]]; then
  shift
  ninja -C "$build" -j "${WICK_BUILD_JOBS:-$(nproc)}" wick_bench_threads
  exec "$build/bin/wick_bench_threads" "$@"
fi
if [[ "${1:-}" == "--libtorch" ]]; then
  shift
  if ! dpkg-query -W -f='${Status}' libtorch-dev 2>/dev/null | grep -q "install ok installed"; then
    echo "bench.sh --libtorch needs libtorch-dev (and libopenblas0-pthread): apt-get install them" >&2
    exit 1
  fi
  cmake -DWICK_BENCH_LIBTORCH=ON "$build" >/dev/null
  ninja -C "$build" -j "${WICK_BUILD_JOBS:-$(nproc)}" wick_bench_libtorch
  out="${WICK_BENCH_OUT:-$build/bench_libtorch.json}"
  # OpenBLAS's own thread pool on top of libtorch's oversubscribes the cores: one thread. And its
  # kernels for this CPU's features, where it does not recognise the CPU's model (a VM's generic
  # one gets its Prescott kernels: bench/openblas_core.py).
  coretype="$(cd "$root/bench" && /usr/bin/python3 -c 'import openblas_core; print(openblas_core.coretype() or "")')"
  OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-$coretype}" OPENBLAS_NUM_THREADS=1 "$build/bin/wick_bench_libtorch" --benchmark_repetitions="${WICK_BENCH_REPETITIONS:-10}" \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_out="$out" --benchmark_out_format=json "$@" >&2
  exec /usr/bin/python3 "$root/bench/report.py" "$out"
fi
if [[ "${1:-}" == "--opencl" ]]; then
  shift
  ninja -C "$build" -j "${WICK_BUILD_JOBS:-$(nproc)}" wick_bench_opencl wick_first_op
  out="${WICK_BENCH_OUT:-$build/bench_opencl.json}"
  "$build/bin/wick_bench_opencl" --benchmark_repetitions="${WICK_BENCH_REPETITIONS:-9}" \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_out="$out" --benchmark_out_format=json "$@" >&2
  /usr/bin/python3 "$root/bench/report.py" "$out"
  echo
  "$root/bench/first_op.sh" "$build"
  exit 0
fi
ninja -C "$build" -j "${WICK_BUILD_JOBS:-$(nproc)}" wick_bench
out="${WICK_BENCH_OUT:-$build/bench.json}"
# Medians of 10 repetitions, interleaved at random so that the machine's drift hits every benchmark
# alike; the console shows progress, the JSON file gets the numbers.
"$build/bin/wick_bench" --benchmark_repetitions="${WICK_BENCH_REPETITIONS:-10}" \
  --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json "$@" >&2
/usr/bin/python3 "$root/bench/report.py" "$out"
