#!/usr/bin/env bash
# `wick plugin check` gives each broken fixture the right verdict and passes the first-party
# plugins: plugin_check_test.sh WICK FIXTURE_DIR CONF_FIXTURE_DIR SLOW_FIXTURE_DIR
set -uo pipefail
wick=$1 fixtures=$2 conf=$3 slow=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
expect() {  # expect NAME EXIT_CODE PATTERN ARGS...
  local name=$1 code=$2 pattern=$3
  shift 3
  local out rc
  out=$("$wick" "$@" plugin check --report "$work/$name" --suite golden --timeout "${TIMEOUT:-2}" "${PLUGIN:?}" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]] || ! grep -qE "$pattern" <<<"$out"; then
    echo "FAILED: $name: exit $rc (want $code), verdict should match /$pattern/:"
    echo "$out" | tail -n 8
    failed=1
  else
    echo "ok: $name: $(grep VERDICT <<<"$out" | cut -c1-160)"
  fi
}
PLUGIN=$conf/conf-fixture-crashy.wick-plugin.toml expect crash 1 'VERDICT: FAIL .*CRASH golden/neg.*signal 11'
PLUGIN=$conf/conf-fixture-oob.wick-plugin.toml expect out-of-bounds 1 'VERDICT: FAIL .*wrote outside output'
PLUGIN=$conf/conf-fixture-supports-throws.wick-plugin.toml expect supports-throws 1 'VERDICT: FAIL — asking op_supports: FAIL golden/neg.*op_supports failed inside the plugin'
PLUGIN=$slow/fixture-slow-init.wick-plugin.toml expect hang-in-initialize 1 'VERDICT: FAIL .*did not return within'
PLUGIN=$fixtures/fixture-wrong-major.wick-plugin.toml expect incompatible 1 'VERDICT: FAIL — incompatible'
PLUGIN=$fixtures/fixture-throws.wick-plugin.toml expect exception 1 'VERDICT: FAIL — failed: .*threw an exception'
PLUGIN=$fixtures/fixture-not-a-plugin.wick-plugin.toml expect not-a-library 1 'VERDICT: FAIL — load failed'
PLUGIN=$fixtures/fixture-bad-manifest.wick-plugin.toml expect bad-manifest 1 'VERDICT: FAIL — load failed'
# The first-party plugins get the default per-case timeout: a PoCL kernel build on a busy
# machine can take longer than the 2 s that is plenty for the broken fixtures.
TIMEOUT=30 PLUGIN=cpu-onednn expect cpu-onednn 0 'VERDICT: PASS'
if "$wick" devices | grep -qE '^opencl +[^ ]+ +[^ ]+ +usable'; then
  TIMEOUT=30 PLUGIN=opencl expect opencl 0 'VERDICT: PASS'
fi
exit $failed
