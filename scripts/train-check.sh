#!/usr/bin/env bash
# The long training check: the three Fashion-MNIST examples for 5 epochs on each device named
# (default cpu-onednn), against issue 12's targets (tests/train_examples_test.sh). CI runs the
# 1-epoch version (ctest training_examples_reach_targets); run this after a change to nn, optim,
# autograd or a plugin's training ops. Minutes on 2 cores for cpu-onednn; opencl (PoCL) is slower.
#   scripts/train-check.sh [DEVICE...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
devices=("$@")
((${#devices[@]})) || devices=(cpu-onednn)
"$root/scripts/setup.sh"
status=0
for device in "${devices[@]}"; do
  echo "train-check: 5 epochs on $device"
  start=$SECONDS
  WICK_PLUGIN_PATH= "$root/tests/train_examples_test.sh" "$build/bin" "$device" 5 || status=1
  echo "train-check: $device took $((SECONDS - start)) s"
done
exit $status
