#!/usr/bin/env bash
# `wick plugin check` gives each broken fixture the right verdict and passes the first-party
# plugins: plugin_check_test.sh WICK FIXTURE_DIR CONF_FIXTURE_DIR SLOW_FIXTURE_DIR
set -uo pipefail
wick=$1
# Absolute, as a vendor's paths would be in the outputs checked below.
fixtures=$(cd "$2" && pwd) conf=$(cd "$3" && pwd) slow=$(cd "$4" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
# matches NAME TEXT: every line of $ALSO (EREs) matches some line of TEXT and $NOT (an ERE) none.
matches() {
  local name=$1 text=$2 pattern
  while IFS= read -r pattern; do
    [[ -z $pattern ]] && continue
    if ! grep -qE -- "$pattern" <<<"$text"; then
      echo "FAILED: $name: no line matches /$pattern/"
      return 1
    fi
  done <<<"${ALSO:-}"
  if [[ -n ${NOT:-} ]] && grep -qE -- "$NOT" <<<"$text"; then
    echo "FAILED: $name: a line matches /$NOT/, which must not be there"
    return 1
  fi
}
expect() {  # expect NAME EXIT_CODE PATTERN ARGS...: `wick ARGS plugin check $PLUGIN`
  local name=$1 code=$2 pattern=$3
  shift 3
  local out rc
  out=$("$wick" "$@" plugin check --report "$work/$name" --suite golden --timeout "${TIMEOUT:-2}" \
        --jobs "${JOBS:-2}" "${PLUGIN:?}" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]] || ! grep -qE "$pattern" <<<"$out" || ! matches "$name" "$out"; then
    echo "FAILED: $name: exit $rc (want $code), verdict should match /$pattern/:"
    echo "$out" | tail -n 12
    failed=1
  else
    echo "ok: $name: $(grep VERDICT <<<"$out" | cut -c1-160)"
  fi
}
check() {  # check NAME CONDITION-TEXT: records a failure unless the caller's test held
  if [[ $2 == ok ]]; then echo "ok: $1"; else echo "FAILED: $1: $2"; failed=1; fi
}
PLUGIN=$conf/conf-fixture-crashy.wick-plugin.toml expect crash 1 'VERDICT: FAIL .*CRASH golden/neg.*signal 11'
PLUGIN=$conf/conf-fixture-oob.wick-plugin.toml expect out-of-bounds 1 'VERDICT: FAIL .*wrote outside output'
# The exception's own text reaches the verdict (issue 21 N7): the ABI's answer cannot carry it,
# the SDK writes it to stderr, the check quotes it.
ALSO='has a bug for neg' \
PLUGIN=$conf/conf-fixture-supports-throws.wick-plugin.toml expect supports-throws 1 'VERDICT: FAIL — asking op_supports: FAIL golden/neg.*op_supports failed inside the plugin'
PLUGIN=$slow/fixture-slow-init.wick-plugin.toml expect hang-in-initialize 1 'VERDICT: FAIL .*did not return within'
PLUGIN=$fixtures/fixture-wrong-major.wick-plugin.toml expect incompatible 1 'VERDICT: FAIL — incompatible'
PLUGIN=$fixtures/fixture-throws.wick-plugin.toml expect exception 1 'VERDICT: FAIL — failed: .*threw an exception'
PLUGIN=$fixtures/fixture-not-a-plugin.wick-plugin.toml expect not-a-library 1 'VERDICT: FAIL — load failed'
PLUGIN=$fixtures/fixture-bad-manifest.wick-plugin.toml expect bad-manifest 1 'VERDICT: FAIL — load failed'

# --- issue 21: the blind spots a vendor found -------------------------------------------------
# N1: a path means that file. The same file in the search path (the SDK template's case: "wick
# --plugin-path T plugin check T/x.wick-plugin.toml") is that plugin, initialized...
NOT='not initialized yet|load failed' PLUGIN=$conf/conf-fixture-oob.wick-plugin.toml \
  expect path-also-in-search-path 1 'VERDICT: FAIL .*wrote outside output' --plugin-path "$conf"
# ...and another manifest of the same name there (an installed copy) gives way, named in a note.
clash=$work/installed
mkdir -p "$clash"
printf 'name = "conf-fixture-oob"\nlibrary = "libwick-not-this-one.so"\nabi_major = 1\ndevice_kinds = ["other"]\n' \
  >"$clash/conf-fixture-oob.wick-plugin.toml"
ALSO="note: $clash/conf-fixture-oob.wick-plugin.toml in the search path has the same name.*this run uses $conf/conf-fixture-oob.wick-plugin.toml" \
NOT='load failed|disabled by' PLUGIN=$conf/conf-fixture-oob.wick-plugin.toml \
  expect path-name-clash 1 'VERDICT: FAIL .*wrote outside output' --plugin-path "$clash"
out=$("$wick" --plugin-path "$clash" conformance --backend "$conf/conf-fixture-oob.wick-plugin.toml" \
      --case golden/copy/f32/contiguous --report "$work/n1-conformance" 2>&1)
status=$(grep -c '"status":"PASS"' "$work/n1-conformance/results.jsonl" 2>/dev/null)
[[ $status == 1 ]] && grep -q "note: $clash/conf-fixture-oob.wick-plugin.toml" <<<"$out" &&
  ! grep -q 'disabled by' <<<"$out" && r=ok || r="conformance --backend PATH did not run PATH's plugin with a note: $out"
check conformance-path-name-clash "$r"

# N2: a short buffer_write is named once, as itself, before any case runs.
ALSO='3\. buffers .*FAIL
smoke, 5\. leaks, 6\. conformance: not run' NOT='wrote outside output' \
PLUGIN=$conf/conf-fixture-short-write.wick-plugin.toml \
  expect short-write 1 'VERDICT: FAIL — buffer writes and reads: .*buffer_write of 64 bytes.*fewer bytes than asked'

# N3: the smoke set honours --timeout and --jobs (a 0-d fill takes 3 s: over a 1 s timeout).
TIMEOUT=1 JOBS=3 PLUGIN=$conf/conf-fixture-slow-fill.wick-plugin.toml \
  expect smoke-timeout 1 'VERDICT: FAIL — the smoke set: TIMEOUT golden/fill/f32/v[0-9]/rank0: no result within 1(\.0+)? s'
grep -qE -- '--jobs 3 --timeout 1(\.0+)?([^0-9.]|$)' "$work/smoke-timeout/smoke/report.html" && r=ok || r="the smoke stage ran without --jobs 3 --timeout 1"
check smoke-jobs "$r"

# N4: buffers the plugin never gives back fail, named with buffers and bytes: in the heap of a
# host-memory device, and in the device's free memory where the device reports it.
PLUGIN=$conf/conf-fixture-leaky.wick-plugin.toml \
  expect leak-heap 1 'VERDICT: FAIL — buffers leak: the host allocated and freed [0-9]+ buffers \([0-9]+ bytes.*[0-9]+ bytes .* more of the process heap'
printf '[plugins.conf-fixture-leaky]\nreport_free_memory = true\n' >"$work/leaky.toml"
PLUGIN=$conf/conf-fixture-leaky.wick-plugin.toml \
  expect leak-device 1 "VERDICT: FAIL — buffers leak: .* more of the device's memory" --config "$work/leaky.toml"

# N5: device properties against the ABI and the manifest, each failure naming the field.
for garbage in kind caps free manifest; do
  case $garbage in
    kind) want='kind = 42 is not a wick_device_kind' ;;
    caps) want='capabilities = 0x10000000001 sets bits 0x10000000000' ;;
    free) want='free memory .* = 2000 bytes is more than memory_bytes = 1000' ;;
    manifest) want="kind = gpu, but the manifest's device_kinds are \[other\]" ;;
  esac
  printf '[plugins.conf-fixture-bad-props]\ngarbage = "%s"\n' "$garbage" >"$work/props-$garbage.toml"
  PLUGIN=$conf/conf-fixture-bad-props.wick-plugin.toml \
    expect "bad-props-$garbage" 1 "VERDICT: FAIL — the device properties \(device_get_props\): conf-fixture-bad-props:0: $want" \
    --config "$work/props-$garbage.toml"
done

# N8: the crash reporter's hint reruns the run: its config file, its plugin paths, the manifest.
printf '[plugins]\npaths = ["%s"]\n' "$conf" >"$work/crash.toml"
"$wick" --config "$work/crash.toml" conformance --backend conf-fixture-crashy --case golden/neg/f32/contiguous \
  --report "$work/n8-config" >/dev/null 2>&1
grep -qF "wick --config $work/crash.toml plugin check $conf/conf-fixture-crashy.wick-plugin.toml runs it" \
  "$work/n8-config/workers.log" && r=ok || r="no hint with --config: $(grep -h 'crashed with' "$work/n8-config/workers.log")"
check crash-hint-config "$r"
"$wick" --plugin-path "$conf" conformance --backend conf-fixture-crashy --case golden/neg/f32/contiguous \
  --report "$work/n8-path" >/dev/null 2>&1
grep -qF "wick --plugin-path $conf plugin check $conf/conf-fixture-crashy.wick-plugin.toml runs it" \
  "$work/n8-path/workers.log" && r=ok || r="no hint with --plugin-path: $(grep -h 'crashed with' "$work/n8-path/workers.log")"
check crash-hint-plugin-path "$r"

# N9: output redirected to a file survives the check being killed while a stage hangs.
(timeout -s KILL 3 "$wick" plugin check --report "$work/n9" "$slow/fixture-slow-init.wick-plugin.toml" \
  >"$work/n9.out" 2>&1) 2>/dev/null  # the subshell, not this one, says "Killed"
grep -q '^wick plugin check .*fixture-slow-init' "$work/n9.out" && r=ok || r="the killed check's file is empty"
check output-survives-kill "$r"

# N10: `config check` says an initialize that overran the deadline timed out (it refused nothing).
printf '[plugins]\npaths = ["%s"]\nprobe_timeout_ms = 200\n\n[plugins.fixture-slow-init]\nlabel = "x"\n' \
  "$slow" >"$work/slow.toml"
out=$("$wick" config check "$work/slow.toml" 2>&1)
grep -q 'timed out in initialize' <<<"$out" && ! grep -q 'refused these options' <<<"$out" && r=ok ||
  r="config check: $out"
check config-check-timeout "$r"

# The first-party plugins get the default per-case timeout: a PoCL kernel build on a busy
# machine can take longer than the 2 s that is plenty for the broken fixtures.
ALSO='5\. leaks .*: OK' TIMEOUT=30 PLUGIN=cpu-onednn expect cpu-onednn 0 'VERDICT: PASS'
if "$wick" devices | grep -qE '^opencl +[^ ]+ +[^ ]+ +usable'; then
  ALSO='5\. leaks .*: OK' TIMEOUT=30 PLUGIN=opencl expect opencl 0 'VERDICT: PASS'
fi
exit $failed
