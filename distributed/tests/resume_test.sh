#!/usr/bin/env bash
# A job resumed from save_checkpoint's file ends with the weights and optimizer state of the same
# job run without a break (wick-distributed-resume-check: 15 global batches uninterrupted, against
# 8, a checkpoint, and a new job loading it for the last 7): exactly in f64 (SGD with momentum, and
# Adam; SGD with a Dropout layer, whose draws the checkpoint's generator states continue), within
# 1e-6 relative in f32 (Adam). Negative controls: the resumed job with a fresh optimizer (its state
# dropped), and with Dropout a generator started over, must differ, so the comparison can fail.
#   resume_test.sh BIN_DIR MPIRUN [MPIRUN ARGS...]
set -euo pipefail
check=$1/wick-distributed-resume-check
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for config in "f64 sgd 0" "f64 adam 0" "f32 adam 1e-6" "f64 sgd 0 dropout"; do
  read -r dtype optimizer tolerance dropout <<<"$config"
  echo "== $dtype $optimizer (tolerance $tolerance) ${dropout:-}"
  common=(--dtype "$dtype" --optimizer "$optimizer" --steps 15)
  [ -n "${dropout:-}" ] && common+=(--dropout)
  "$@" "$check" "${common[@]}" --out "$out/full.safetensors"
  "$@" "$check" "${common[@]}" --stop-after 8 --out "$out/checkpoint.safetensors"
  "$@" "$check" "${common[@]}" --resume "$out/checkpoint.safetensors" --out "$out/resumed.safetensors"
  "$check" --compare "$out/full.safetensors" "$out/resumed.safetensors" --tolerance "$tolerance"
  "$@" "$check" "${common[@]}" --resume "$out/checkpoint.safetensors" --drop-optimizer-state \
    --out "$out/dropped.safetensors"
  if "$check" --compare "$out/full.safetensors" "$out/dropped.safetensors" --tolerance "$tolerance"; then
    echo "resume_test: FAIL: resumed without the optimizer's state, the job still matched"
    exit 1
  fi
  if [ -n "${dropout:-}" ]; then
    "$@" "$check" "${common[@]}" --resume "$out/checkpoint.safetensors" --drop-generator-state \
      --out "$out/reseeded.safetensors"
    if "$check" --compare "$out/full.safetensors" "$out/reseeded.safetensors" --tolerance "$tolerance"; then
      echo "resume_test: FAIL: resumed without the generators' state, the job with Dropout still matched"
      exit 1
    fi
  fi
done
echo "resume_test: PASS"
