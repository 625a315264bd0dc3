#!/usr/bin/python3
"""Writes many_tensors.safetensors beside this script: 1,000 tensors "t0" .. "t999", a fuzz seed
with many entries (scripts/fuzz.sh seeds the safetensors target from this folder) and a fixture of
tests/test_safetensors.cpp. Each tensor is U8: "t<i>" with i % 100 == 99 holds one byte, i % 251,
the others have shape [0]. The JSON has no spaces and is padded with spaces to 8 bytes.
1,000 rather than more: libFuzzer caps its inputs at the largest seed, and a 10,000-tensor seed
(559 KB) cut the target's runs 30-fold; this one (55 KB) costs half. The test of a million
tensors builds its header in memory.
Run it from anywhere: python3 tests/data/safetensors/make_many_tensors.py
"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "many_tensors.safetensors")


def main():
    header, data = {}, b""
    for i in range(1_000):
        size = 1 if i % 100 == 99 else 0
        header[f"t{i}"] = {"dtype": "U8", "shape": [size], "data_offsets": [len(data), len(data) + size]}
        data += bytes([i % 251]) * size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(OUT, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


if __name__ == "__main__":
    main()
