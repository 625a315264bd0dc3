#!/usr/bin/env bash
# The test job: set up, build, run the whole test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
