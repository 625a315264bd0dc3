#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan+UBSan) in build-fuzz/ and runs each: first on
# its checked-in regression inputs (fuzz/regressions/<name>/: every input that once crashed it, run
# once), then fuzzing from its seed corpus for SECONDS (among the seeds, one of many entries for
# each target: fuzz/make_many_entry_seeds.py). Exits non-zero on any crash, sanitizer
# report, timeout or out-of-memory, leaving the input under build-fuzz/artifacts/<name>/.
#   scripts/fuzz.sh [SECONDS] [NAME...]    NAME: config manifest safetensors idx onnx_proto onnx_import
# fuzz_onnx_import lowers models onto the main build's cpu-onednn plugin: build that first
# (scripts/setup.sh). WICK_FUZZ_BUILD_DIR overrides build-fuzz/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
main_build="${WICK_BUILD_DIR:-$root/build}"
fuzz_build="${WICK_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
shift || true
names=("$@")
((${#names[@]})) || names=(config manifest safetensors idx onnx_proto onnx_import)
node_dir=/usr/share/libonnx-testdata/data/node

CXX=clang++ cmake -S "$root/fuzz" -B "$fuzz_build" -G Ninja -DWICK_MAIN_BUILD="$main_build" >/dev/null
cmake --build "$fuzz_build" -j "$(nproc)" --target $(printf 'fuzz_%s ' "${names[@]}")

seeds_of() {
  case "$1" in
    config) echo "$root/configs $root/fuzz/seeds/config" ;;
    manifest) echo "$root/fuzz/seeds/manifest" ;;
    safetensors) echo "$root/tests/data/safetensors" ;;
    idx) echo "$root/tests/data/idx $root/fuzz/seeds/idx" ;;
    onnx_proto | onnx_import)
      if [ ! -d "$fuzz_build/seeds/$1" ] && [ -d "$node_dir" ]; then
        python3 "$root/fuzz/make_onnx_seeds.py" "$node_dir" "$fuzz_build/seeds/onnx_proto" \
          "$fuzz_build/seeds/onnx_import" >/dev/null
      fi
      echo "$fuzz_build/seeds/$1 $root/fuzz/seeds/$1" ;;
  esac
}

failed=()
for name in "${names[@]}"; do
  exe="$fuzz_build/fuzz_$name"
  artifacts="$fuzz_build/artifacts/$name"
  corpus="$fuzz_build/corpus/$name"
  mkdir -p "$artifacts" "$corpus"
  log="$fuzz_build/fuzz_$name.log"
  regressions=()
  [ -d "$root/fuzz/regressions/$name" ] && regressions=("$root/fuzz/regressions/$name"/*)
  if ((${#regressions[@]})); then
    if ! OMP_NUM_THREADS=1 "$exe" -timeout=20 "${regressions[@]}" >"$log" 2>&1; then
      echo "fuzz: $name FAILED on a regression input (fuzz/regressions/$name): see $log"
      tail -30 "$log"
      failed+=("$name")
      continue
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
    failed+=("$name")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
