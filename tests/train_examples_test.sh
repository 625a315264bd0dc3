#!/usr/bin/env bash
# The Fashion-MNIST examples reach issue 12's targets after 5 epochs on the CPU, with no fallback:
# MLP test accuracy >= 0.85, CNN >= 0.89, autoencoder test MSE < 0.015.
#   train_examples_test.sh BIN_DIR [DEVICE]
set -uo pipefail
bin=$1 device=${2:-cpu-onednn}
failed=0
check() {  # check NAME FIELD OP LIMIT
  local name=$1 field=$2 op=$3 limit=$4 out value
  out=$("$bin/wick-example-$name" --device "$device" --strict --epochs 5 --no-progress 2>&1)
  if [[ $? -ne 0 ]]; then
    echo "FAILED: $name did not run:"; echo "$out" | tail -n 5; failed=1; return
  fi
  echo "$out" | grep -E '^epoch'
  value=$(grep '^RESULT' <<<"$out" | tr ' ' '\n' | sed -n "s/^$field=//p")
  if python3 -c "import sys; sys.exit(0 if $value $op $limit else 1)"; then
    echo "ok: $name $field=$value ($op $limit)"
  else
    echo "FAILED: $name $field=$value, want $op $limit"; failed=1
  fi
}
check mlp accuracy '>=' 0.85
check cnn accuracy '>=' 0.89
check autoencoder test_mse '<' 0.015
exit $failed
