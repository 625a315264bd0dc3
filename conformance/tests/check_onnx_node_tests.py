#!/usr/bin/env python3
"""The current ONNX release's node tests on the first-party backends (ctest
conformance_onnx_node_tests): every backend passes at least FLOOR folders and none FAILs, CRASHes,
TIMEOUTs or XPASSes beyond the expectations file (conformance/onnx-node-1.23.2.expect lists the
folders whose own data is wrong, with the hand check).

    check_onnx_node_tests.py WICK FOLDER BACKENDS FLOOR EXPECTATIONS

FOLDER is build/onnx-node-1.23.2, which scripts/setup.sh makes once (a venv build/onnx-venv with
onnx==1.23.2, then onnx/tools/make_node_tests.py).
"""
import json
import os
import subprocess
import sys
import tempfile

PINNED = "1.23.2"
CASES = 1884  # onnx 1.23.2's collect_testcases: the node kind


def main():
    wick, folder, backends, floor, expectations = sys.argv[1:6]
    floor = int(floor)
    stamp = os.path.join(folder, "ONNX_VERSION")
    if not os.path.isfile(stamp):
        sys.exit(f"FAIL: {folder} holds no ONNX {PINNED} node tests (no ONNX_VERSION): run scripts/setup.sh, "
                 f"which makes build/onnx-venv (pip install onnx=={PINNED}) and writes them with "
                 "onnx/tools/make_node_tests.py")
    with open(stamp) as f:
        words = f.read().split()
    if words[:2] != [PINNED, str(CASES)]:
        sys.exit(f"FAIL: {stamp} says {' '.join(words)}, expected {PINNED} {CASES}: re-run scripts/setup.sh "
                 f"(remove {folder} first)")
    with tempfile.TemporaryDirectory() as report:
        config = os.path.join(report, "patient.toml")
        with open(config, "w") as f:  # PoCL's start-up on a busy machine: see check_suite.py
            f.write("[plugins]\nprobe_timeout_ms = 60000\n")
        cmd = [wick, "--config", config, "conformance", "--suite", "onnx", "--onnx-dir", folder, "--backend", backends,
               "--jobs", "2", "--expectations", expectations, "--fail-on", "never", "--report", report]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            print(p.stdout)
            sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}")
        rs = [json.loads(line) for line in open(os.path.join(report, "results.jsonl"))]
    ok = True
    for b in backends.split(","):
        mine = [r for r in rs if r["backend"] == b]
        count = {}
        for r in mine:
            count[r["status"]] = count.get(r["status"], 0) + 1
        bad = [r for r in mine if r["status"] in ("FAIL", "CRASH", "TIMEOUT", "XPASS")]
        passed = count.get("PASS", 0)
        good = passed >= floor and not bad and len(mine) == CASES
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'}: {b}: {passed} of {len(mine)} ONNX {PINNED} node tests pass (floor {floor}, "
              f"goal 1700); {json.dumps(count, sort_keys=True)}")
        for r in bad[:10]:
            print(f"  {r['status']} {r['case']}: {r['message'][:300]}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
