"""Run by scripts/test.sh against the package pip installed into a fresh venv (not the build tree):
it imports from site-packages, finds its plugins inside the package, and computes a hand-worked
value on every usable device."""
import os
import sys

import wick

here = os.path.dirname(os.path.abspath(wick.__file__))
assert "site-packages" in here, f"wick imported from {here}, not from the venv's site-packages"
search = [d for d, _ in wick.plugin_search_path()]
assert any(d.startswith(here) for d in search), f"the plugin search path {search} is not inside {here}"
states = {p.name: p.state for p in wick.plugins()}
assert states.get("cpu-onednn") == "usable", states
for dev in wick.devices():
    x = wick.asarray([[1.0, 2.0], [3.0, 4.0]], device=dev)
    got = (x @ x + 1).tolist()
    assert got == [[8.0, 11.0], [16.0, 23.0]], (dev, got)
print(f"installed package: {here}")
for p in wick.plugins():
    print(f"  {p.name:12s} {p.state:12s} {p.reason}")
print("devices:", [d.name for d in wick.devices()])
sys.exit(0)
