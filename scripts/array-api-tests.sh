#!/usr/bin/env bash
# The Array API standard's own test suite (array-api-tests, vendored unmodified in
# ../shared/vendor/array-api-tests) on the package `wick` (issue 27).
#   scripts/array-api-tests.sh [--python PY] [--max-examples N] [--device NAME] [--out DIR] [pytest args...]
# --max-examples: hypothesis examples per test (CI: 5; the suite's default, 100, when not given).
# --device: the device the arrays are made on (as WICK_DEVICE: "cpu", "opencl").
# Skips and expected failures are python/array-api/skips.txt and xfails.txt, each line with its
# reason. Writes DIR/report.json and prints passed / failed / skipped / xfailed over all collected
# tests; fails when a test fails or fewer than 95% of the collected tests pass.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${root}/build/python-venv/bin/python"
suite="${WICK_ARRAY_API_TESTS_DIR:-$root/../shared/vendor/array-api-tests}"
out="${root}/build/array-api-tests"
examples=()
device=""
extra=()
while (($#)); do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --max-examples) examples=(--max-examples "$2"); shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --out) out="$(realpath -m "$2")"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
# Our lists carry each test's reason after " # "; the suite reads whole lines as test ids, so it
# gets copies without them. An entry without a reason is an error.
# A device's own list (python/array-api/xfails-opencl.txt, for --device opencl) adds to the common
# one.
for list in skips xfails; do
  : > "$out/$list.txt"
  for src in "$root/python/array-api/$list.txt" "$root/python/array-api/$list-${device%%:*}.txt"; do
    [ -f "$src" ] || continue
    if grep -nE '^array_api_tests' "$src" | grep -v ' # ' >&2; then
      echo "array-api-tests.sh: the entries above in $src have no reason (' # why')" >&2
      exit 2
    fi
    sed -E 's/[[:space:]]+#.*$//' "$src" >> "$out/$list.txt"
  done
done
if [ -n "$device" ]; then
  export WICK_DEVICE="$device"
  # Off the CPU, a kernel's first use compiles it (PoCL: about a second), past hypothesis's 800 ms
  # deadline per example; the deadline checks speed, which this suite is not about.
  [ "${device%%:*}" != cpu ] && extra+=(--hypothesis-disable-deadline)
fi
export ARRAY_API_TESTS_MODULE=wick PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="${PYTHONPATH:-$root/build/python}"
# The suite's conftest.py sits beside array_api_tests/: run from there (read-only is fine).
cd "$suite"
set +e
"$python" -m pytest array_api_tests -p no:cacheprovider -q -rfE --tb=line \
  --skips-file "$out/skips.txt" --xfails-file "$out/xfails.txt" \
  --json-report --json-report-file="$out/report.json" --json-report-omit collectors log \
  "${examples[@]}" "${extra[@]}"
rc=$?
set -e
"$python" "$root/python/array-api/summary.py" "$out/report.json" --min-pass 0.95 || rc=1
exit $rc
