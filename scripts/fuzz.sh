#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan+UBSan) in build-fuzz/ and runs each: first on
# its checked-in regression inputs (fuzz/regressions/<name>/: every input that once crashed it, run
# once), then fuzzing from its seed corpus for SECONDS (among the seeds, one of many entries for
# each target: fuzz/make_many_entry_seeds.py). Exits non-zero on any crash, sanitizer
# report, timeout or out-of-memory, leaving the input under build-fuzz/artifacts/<name>/.
#   scripts/fuzz.sh [SECONDS] [NAME...]    NAME: config manifest safetensors gguf idx onnx_proto
#                                          onnx_import tokenizer
# fuzz_onnx_import lowers models onto the main build's cpu-onednn plugin: build that first
# (scripts/setup.sh). WICK_FUZZ_BUILD_DIR overrides build-fuzz/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
main_build="${WICK_BUILD_DIR:-$root/build}"
fuzz_build="${WICK_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
shift || true
names=("$@")
((${#names[@]})) || names=(config manifest safetensors gguf idx onnx_proto onnx_import tokenizer)
node_dir=/usr/share/libonnx-testdata/data/node

CXX=clang++ cmake -S "$root/fuzz" -B "$fuzz_build" -G Ninja -DWICK_MAIN_BUILD="$main_build" >/dev/null
cmake --build "$fuzz_build" -j "$(nproc)" --target $(printf 'fuzz_%s ' "${names[@]}")

seeds_of() {
  case "$1" in
    config) echo "$root/configs $root/fuzz/seeds/config" ;;
    manifest) echo "$root/fuzz/seeds/manifest" ;;
    tokenizer) echo "$root/fuzz/seeds/tokenizer" ;;
    safetensors) echo "$root/tests/data/safetensors" ;;
    gguf) echo "$root/tests/data/gguf $root/fuzz/seeds/gguf" ;;
    idx) echo "$root/tests/data/idx $root/fuzz/seeds/idx" ;;
    onnx_proto | onnx_import)
      if [ ! -d "$fuzz_build/seeds/$1" ] && [ -d "$node_dir" ]; then
        python3 "$root/fuzz/make_onnx_seeds.py" "$node_dir" "$fuzz_build/seeds/onnx_proto" \
          "$fuzz_build/seeds/onnx_import" >/dev/null
      fi
      echo "$fuzz_build/seeds/$1 $root/fuzz/seeds/$1" ;;
  esac
}

# fuzz_one NAME: replays NAME's regression inputs, then fuzzes it; prints one verdict line and
# returns non-zero on a finding.
fuzz_one() {
  local name=$1 exe="$fuzz_build/fuzz_$1" artifacts="$fuzz_build/artifacts/$1" corpus="$fuzz_build/corpus/$1"
  local log="$fuzz_build/fuzz_$1.log" runs regressions=()
  mkdir -p "$artifacts" "$corpus"
  [ -d "$root/fuzz/regressions/$name" ] && regressions=("$root/fuzz/regressions/$name"/*)
  if ((${#regressions[@]})); then
    if ! OMP_NUM_THREADS=1 "$exe" -timeout=20 "${regressions[@]}" >"$log" 2>&1; then
      echo "fuzz: $name FAILED on a regression input (fuzz/regressions/$name): see $log"
      tail -30 "$log"
      return 1
    fi
  fi
  # -timeout: one input may take 20 s (a sanitized importer lowering a big graph), not more.
  if OMP_NUM_THREADS=1 "$exe" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$corpus" $(seeds_of "$name") >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $name clean: ${runs:-?} runs in ${seconds} s (${#regressions[@]} regression inputs replayed)"
  else
    echo "fuzz: $name FAILED: see $log; the input is in $artifacts"
    grep -E "ERROR|SUMMARY|runtime error" "$log" | head -10
    return 1
  fi
}

# The onnx seeds are made once, before the targets run side by side (one fuzzer per core; each
# target's verdict is printed when all are done, in the order named).
for name in "${names[@]}"; do seeds_of "$name" >/dev/null; done
jobs_max=$(nproc)
for name in "${names[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
  rm -f "$fuzz_build/status_$name"
  (
    set +e
    fuzz_one "$name"
    echo $? >"$fuzz_build/status_$name"
  ) >"$fuzz_build/verdict_$name" 2>&1 &
done
wait
failed=()
for name in "${names[@]}"; do
  cat "$fuzz_build/verdict_$name"
  [ "$(cat "$fuzz_build/status_$name" 2>/dev/null)" = 0 ] || failed+=("$name")
done
if ((${#failed[@]})); then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
