#!/usr/bin/env python3
"""Prints the importer's opset table (onnx/src/lowerings.cpp's rows) as Markdown for docs/onnx.md:
one line per op type with the opset ranges its rows serve.   python3 onnx/tools/opset_table.py"""
import collections
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
text = open(os.path.join(ROOT, "src", "lowerings.cpp")).read()
checked = re.search(r"kChecked = (\d+)", open(os.path.join(ROOT, "src", "lowerings.hpp")).read()).group(1)
rows = collections.OrderedDict()
for op, first, last in re.findall(r'\{"([A-Za-z0-9_.]+)", (\d+), (\w+), &Impl::', text):
    rows.setdefault(op, []).append(f"{first}-{checked if last == 'kChecked' else last}")
print(f"{len(rows)} op types; kChecked = {checked} (ONNX 1.23.2)\n")
print("| op | opsets served |\n|---|---|")
for op in sorted(rows, key=str.lower):
    print(f"| {op} | {', '.join(rows[op])} |")
