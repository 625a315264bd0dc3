#!/usr/bin/env bash
# The first op of a process on the OpenCL device, twice, with caches (Wick's and PoCL's, both under
# XDG_CACHE_HOME) emptied before the first: the first process compiles the program, the second
# should find it cached. Prints both JSON lines and the ratio. Not a test.
#
#   bench/first_op.sh [build dir] [device]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${WICK_BUILD_DIR:-$root/build}}"
device="${2:-opencl}"
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
cold=$(XDG_CACHE_HOME="$cache" POCL_CACHE_DIR="$cache/pocl" "$build/bin/wick_first_op" "$device")
warm=$(XDG_CACHE_HOME="$cache" POCL_CACHE_DIR="$cache/pocl" "$build/bin/wick_first_op" "$device")
echo "first process (empty caches): $cold"
echo "second process (warm caches): $warm"
python3 - "$cold" "$warm" <<'PY'
import json, sys
cold, warm = (json.loads(a) for a in sys.argv[1:3])
print("first op: %.1f ms cold, %.1f ms warm (%.0fx)" % (cold["first_op_ms"], warm["first_op_ms"],
      cold["first_op_ms"] / max(warm["first_op_ms"], 1e-3)))
PY
