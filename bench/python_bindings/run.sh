#!/usr/bin/env bash
# Per-call overhead of the two binding libraries the Python package could use (issue 27): a class
# whose __add__ returns a new object holding a shared_ptr, bound with nanobind and with pybind11,
# timed from Python (a + b) interleaved with NumPy's 1-element add; medians of 9 rounds.
#   bench/python_bindings/run.sh [PYTHON]   (PYTHON needs nanobind, pybind11 and numpy)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${1:-/usr/bin/python3}"
out="$(mktemp -d)"
cmake -S "$here" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python" >/dev/null
cmake --build "$out" >/dev/null
cd "$out" && "$python" - <<'PY'
import statistics, timeit
import numpy as np
import nbm, pbm
a1, b1, a2, b2 = nbm.T(), nbm.T(), pbm.T(), pbm.T()
x, y = np.ones(1, np.float32), np.ones(1, np.float32)
res = {"nanobind": [], "pybind11": [], "numpy add": []}
for _ in range(9):
    res["nanobind"].append(min(timeit.repeat(lambda: a1 + b1, number=100000, repeat=3)) / 1e5 * 1e9)
    res["pybind11"].append(min(timeit.repeat(lambda: a2 + b2, number=100000, repeat=3)) / 1e5 * 1e9)
    res["numpy add"].append(min(timeit.repeat(lambda: x + y, number=100000, repeat=3)) / 1e5 * 1e9)
for k, v in res.items():
    print(f"{k:10s} {statistics.median(v):6.0f} ns per call")
PY
