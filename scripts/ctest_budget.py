#!/usr/bin/env python3
"""After a ctest pass: each test's time against its timeout, the slowest listed, and a failure when
any test took more than half of its timeout (a test that close to its limit times out on a busier
machine: raise the timeout with a reason, or make the test smaller).

Usage: ctest_budget.py BUILD_DIR JUNIT_XML [LABEL]
  BUILD_DIR   the ctest build directory (its tests' TIMEOUT properties are read from
              `ctest --show-only=json-v1`; a test without one has ctest's default, 1500 s)
  JUNIT_XML   the file of `ctest --output-junit` for the pass
  LABEL       printed with the summary (e.g. "ONEDNN_MAX_CPU_ISA=AVX2")
Exit status 1 when a test is over half its timeout, or when the files cannot be read.
"""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

DEFAULT_TIMEOUT = 1500.0  # ctest's default (DART_TESTING_TIMEOUT) when a test sets none
SHOW = 8


def timeouts(build):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True, capture_output=True, text=True).stdout
    result = {}
    for test in json.loads(out).get("tests", []):
        t = DEFAULT_TIMEOUT
        for prop in test.get("properties", []):
            if prop.get("name") == "TIMEOUT":
                t = float(prop["value"])
        result[test["name"]] = t
    return result


def times(junit):
    root = ET.parse(junit).getroot()
    cases = root.iter("testcase")
    return {c.get("name"): float(c.get("time", "0")) for c in cases if c.get("status", "run") != "notrun"}


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    build, junit = argv[1], argv[2]
    label = argv[3] if len(argv) > 3 else ""
    limit = timeouts(build)
    took = times(junit)
    rows = sorted(((t, name, limit.get(name, DEFAULT_TIMEOUT)) for name, t in took.items()), reverse=True)
    print("ctest budget%s: %d tests, %.0f s of test time; the slowest:" % (" (" + label + ")" if label else "",
                                                                          len(rows), sum(r[0] for r in rows)))
    for t, name, timeout in rows[:SHOW]:
        print("  %7.1f s of %6.0f s (%3.0f%%)  %s" % (t, timeout, 100 * t / timeout, name))
    over = [(t, name, timeout) for t, name, timeout in rows if t > timeout / 2]
    for t, name, timeout in over:
        print("ctest budget: %s took %.1f s, more than half of its %.0f s timeout" % (name, t, timeout))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
