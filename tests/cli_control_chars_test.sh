#!/usr/bin/env bash
# Control characters from a file never reach the terminal raw: `wick config check` on a config
# whose plugin name holds ESC and a C1 control (CSI, U+009B) prints them as visible escapes,
# while ordinary UTF-8 (a pound sign: 0xC2 0xA3, the same lead byte as C1 controls) is untouched.
#   cli_control_chars_test.sh WICK
set -uo pipefail
wick=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[plugins."evil\\u001b[31mred\\u009b\\u00a3"]\nx = 1\n' > "$work/evil.toml"
WICK_PLUGIN_PATH= "$wick" config check "$work/evil.toml" > "$work/out" 2>&1
failed=0
if LC_ALL=C grep -q $'\x1b' "$work/out"; then echo "FAILED: a raw ESC reached the output"; failed=1; fi
if LC_ALL=C grep -q $'\xc2\x9b' "$work/out"; then echo "FAILED: a raw C1 control (CSI) reached the output"; failed=1; fi
if ! grep -qF 'evil\x1b[31mred\u009b' "$work/out"; then echo "FAILED: the escapes are not shown"; failed=1; fi
if ! LC_ALL=C grep -q $'\xc2\xa3' "$work/out"; then echo "FAILED: ordinary UTF-8 was altered"; failed=1; fi
cat -v "$work/out"
exit $failed
