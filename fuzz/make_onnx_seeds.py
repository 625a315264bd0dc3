#!/usr/bin/env python3
"""Seed corpora for fuzz_onnx_proto and fuzz_onnx_import from the ONNX node tests (Debian's
libonnx-testdata): every model.onnx and input_*.pb of at most --max-bytes for the reader; for the
importer, one file per folder holding model.onnx then test_data_set_0's inputs, each as a record
[u32 little-endian length][bytes] (the layout fuzz_onnx_import.cpp reads).

    fuzz/make_onnx_seeds.py /usr/share/libonnx-testdata/data/node OUT_PROTO OUT_IMPORT
"""
import argparse
import os
import struct


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("node_dir")
    ap.add_argument("proto_dir")
    ap.add_argument("import_dir")
    ap.add_argument("--max-bytes", type=int, default=16384, help="largest file or record set taken")
    a = ap.parse_args()
    os.makedirs(a.proto_dir, exist_ok=True)
    os.makedirs(a.import_dir, exist_ok=True)
    n_proto = n_import = 0
    for folder in sorted(os.listdir(a.node_dir)):
        model = os.path.join(a.node_dir, folder, "model.onnx")
        if not os.path.isfile(model):
            continue
        parts = [open(model, "rb").read()]
        data_set = os.path.join(a.node_dir, folder, "test_data_set_0")
        k = 0
        while os.path.isfile(os.path.join(data_set, f"input_{k}.pb")):
            parts.append(open(os.path.join(data_set, f"input_{k}.pb"), "rb").read())
            k += 1
        for i, p in enumerate(parts):
            if len(p) <= a.max_bytes:
                with open(os.path.join(a.proto_dir, f"{folder}.{i}"), "wb") as f:
                    f.write(p)
                n_proto += 1
        if sum(len(p) + 4 for p in parts) <= a.max_bytes:
            with open(os.path.join(a.import_dir, folder), "wb") as f:
                for p in parts:
                    f.write(struct.pack("<I", len(p)) + p)
            n_import += 1
    print(f"make_onnx_seeds: {n_proto} reader seeds in {a.proto_dir}, {n_import} importer seeds in {a.import_dir}")


if __name__ == "__main__":
    main()
