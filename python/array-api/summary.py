"""Counts of an array-api-tests run (pytest-json-report's report.json): passed, failed, skipped,
xfailed, over every collected test, by test file; exits 1 when fewer than --min-pass pass."""
import argparse
import collections
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("report")
ap.add_argument("--min-pass", type=float, default=0.95)
args = ap.parse_args()
tests = json.load(open(args.report))["tests"]
total = collections.Counter(t["outcome"] for t in tests)
by_file = collections.defaultdict(collections.Counter)
for t in tests:
    by_file[t["nodeid"].split("::")[0]][t["outcome"]] += 1
n = len(tests)
for f, c in sorted(by_file.items()):
    print(f"  {f:60s} " + " ".join(f"{k} {v}" for k, v in sorted(c.items())))
frac = total["passed"] / n if n else 0.0
print(f"array-api-tests: {n} collected: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())) +
      f"; passed {100 * frac:.1f}% (target {100 * args.min_pass:.0f}%)")
sys.exit(0 if frac >= args.min_pass else 1)
