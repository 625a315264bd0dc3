#!/usr/bin/env bash
# The main job: set up, build, show the devices, run the demo on the selected device.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
echo "== wick devices"
"$build/bin/wick" devices
echo
echo "== wick demo"
"$build/bin/wick" demo
