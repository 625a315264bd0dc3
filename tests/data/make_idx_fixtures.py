#!/usr/bin/python3
"""Writes the fixtures of tests/test_data.cpp into tests/data/idx/.

IDX files written by hand (two zero bytes, a type byte, the rank, big-endian u32 extents, then
big-endian elements), raw and gzip'd, with values given by the formulas below (the test states the
same values); corrupt variants, each breaking one rule; and permutations.txt: the permutations that
wick::data::permutation must give, computed here with the same splitmix64 + Fisher-Yates definition
(docs/training.md), so the C++ code is checked against an independent implementation.
Run it from anywhere: python3 tests/data/make_idx_fixtures.py
"""
import gzip
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idx")
TYPES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}
M64 = (1 << 64) - 1


def idx(arr):
    a = np.asarray(arr)
    code = TYPES[a.dtype.type]
    head = bytes([0, 0, code, a.ndim]) + b"".join(struct.pack(">I", d) for d in a.shape)
    return head + a.astype(a.dtype.newbyteorder(">")).tobytes()


def gz(data):
    return gzip.compress(data, mtime=0)


def splitmix64(seed, k):
    z = (seed + (k + 1) * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def permutation(n, seed):
    p, k = list(range(n)), 0
    for i in range(n - 1, 0, -1):
        bound = i + 1
        limit = (1 << 64) - ((1 << 64) % bound)  # draws at or above it are redrawn
        x = splitmix64(seed, k)
        k += 1
        while x >= limit:
            x = splitmix64(seed, k)
            k += 1
        j = x % bound
        p[i], p[j] = p[j], p[i]
    return p


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {}
    u8 = (np.arange(24) * 7 % 256).astype(np.uint8).reshape(2, 3, 4)  # value = 7 * i mod 256
    files["u8_2x3x4.idx"] = idx(u8)
    files["u8_2x3x4.idx.gz"] = gz(idx(u8))
    files["i8_4.idx"] = idx(np.array([-128, -1, 0, 127], dtype=np.int8))
    files["i16_2x2.idx.gz"] = gz(idx(np.array([[-32768, -2], [258, 32767]], dtype=np.int16)))
    files["i32_5.idx"] = idx(np.array([-2, -1, 0, 1, 2**31 - 1], dtype=np.int32))
    files["f32_2x2.idx.gz"] = gz(idx(np.array([[1.5, -2.25], [0.0, 3e38]], dtype=np.float32)))
    files["f64_3.idx"] = idx(np.array([0.1, -1e300, 2.0], dtype=np.float64))
    files["u8_scalar.idx"] = idx(np.array(9, dtype=np.uint8))  # rank 0
    files["u8_empty.idx"] = idx(np.zeros((0, 5), dtype=np.uint8))
    # A ten-sample dataset: image k (2x3) holds 10k + j, its label is (3k + 1) mod 10.
    images = np.array([[10 * k + j for j in range(6)] for k in range(10)], dtype=np.uint8).reshape(10, 2, 3)
    labels = np.array([(3 * k + 1) % 10 for k in range(10)], dtype=np.uint8)
    files["images_10.idx3.gz"] = gz(idx(images))
    files["labels_10.idx1.gz"] = gz(idx(labels))
    # Two gzip members back to back (what `cat a.gz b.gz` makes) are one file.
    whole = idx(np.arange(10, dtype=np.uint8))
    files["u8_10_two_members.idx.gz"] = gz(whole[:7]) + gz(whole[7:])

    good = idx(np.arange(12, dtype=np.uint8).reshape(3, 4))
    files["corrupt_short_magic.idx"] = b"\x00\x00\x08"
    files["corrupt_bad_magic.idx"] = b"\x01\x00\x08\x01" + struct.pack(">I", 1) + b"\x00"
    files["corrupt_unknown_type.idx"] = b"\x00\x00\x0A\x01" + struct.pack(">I", 1) + b"\x00"
    files["corrupt_truncated_dims.idx"] = b"\x00\x00\x08\x03" + struct.pack(">I", 3) + b"\x00\x00"
    files["corrupt_truncated_data.idx"] = good[:-3]
    files["corrupt_trailing.idx"] = good + b"\x00"
    files["corrupt_trailing.idx.gz"] = gz(good + b"\x00\x01")
    files["corrupt_overflow.idx"] = b"\x00\x00\x0E\x08" + struct.pack(">I", 0xFFFFFFFF) * 8
    files["corrupt_too_big.idx"] = b"\x00\x00\x08\x03" + struct.pack(">III", 65536, 65536, 16)
    full = gz(good)
    files["corrupt_truncated.idx.gz"] = full[: len(full) // 2]
    bad_crc = bytearray(full)
    bad_crc[-8] ^= 0xFF  # the CRC-32 of the trailer
    files["corrupt_crc.idx.gz"] = bytes(bad_crc)
    # A gzip bomb: the header needs 16 bytes of data, the stream inflates to 16 MiB more (16 KB).
    files["corrupt_bomb.idx.gz"] = gzip.compress(idx(np.arange(16, dtype=np.uint8)) + bytes(16 << 20),
                                                 compresslevel=9, mtime=0)

    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    with open(os.path.join(OUT, "permutations.txt"), "w") as f:
        f.write("# n seed: permutation(n, seed), from make_idx_fixtures.py\n")
        for n, seed in [(1, 0), (2, 0), (10, 42), (10, 43), (17, 2**64 - 1), (100, 12345)]:
            f.write(f"{n} {seed}: {' '.join(map(str, permutation(n, seed)))}\n")
    print(f"wrote {len(files) + 1} files to {OUT}")


if __name__ == "__main__":
    main()
