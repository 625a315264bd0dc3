#!/usr/bin/env bash
# The main job: set up, build, show the devices, run the demo on the selected device, then the
# conformance suite on every usable backend.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
echo "== wick devices"
"$build/bin/wick" devices
echo
echo "== wick demo"
"$build/bin/wick" demo
echo
echo "== wick conformance (every usable backend; reports in $build/conformance-report)"
"$build/bin/wick" conformance --backend all --report "$build/conformance-report"
