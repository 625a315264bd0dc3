#!/usr/bin/env python3
"""Fuzz seeds with many entries (issue 22): each reader's fuzz target starts from an input that has
many of what it reads, not only a few, so that mutations reach the reader's per-entry paths at
scale. Each seed is a few tens of KB; the tests that time the readers at a million entries are in
tests/test_parsers_linear.cpp. Python's standard library only; the seeds are checked in.

    fuzz/make_many_entry_seeds.py            # writes fuzz/seeds/{config,manifest,idx,onnx_proto,onnx_import}/
    fuzz/make_many_entry_seeds.py --node-test DIR
        also writes DIR/test_many_nodes/ (model.onnx, test_data_set_0/{input,output}_0.pb): the
        importer seed as an ONNX node test, to check that it imports (wick conformance --onnx-dir)

fuzz_safetensors needs none here: tests/data/safetensors/many_tensors.safetensors has 1,000 tensors.
"""
import argparse
import gzip
import os
import struct

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def config_seed():
    """300 plugin tables of options, a 300-entry device list and a 300-entry disable list."""
    out = ["[devices]", "priority = [" + ", ".join(f'"dev{i}"' for i in range(300)) + ', "cpu"]',
           "strict = false", "", "[plugins]", "paths = []",
           "disable = [" + ", ".join(f'"off{i}"' for i in range(300)) + "]", ""]
    for i in range(300):
        out += [f"[plugins.p{i}]", f"threads = {i % 16}", f'mode = "m{i}"', f"scale = {i}.5",
                f"on = {'true' if i % 2 else 'false'}", ""]
    out += ["[log]", 'level = "warn"', ""]
    return "\n".join(out).encode()


def manifest_seed():
    """A valid manifest with 400 device kinds, 400 keys, 200 dotted keys and 200 tables."""
    out = ['name = "many"', 'library = "libwick-many.so"', "abi_major = 1", "first_party = false",
           "device_kinds = [" + ", ".join(f'"kind{i}"' for i in range(400)) + "]"]
    out += [f"key{i} = {i}" for i in range(400)]
    out += [f"dotted.key{i} = {i}" for i in range(200)]
    for i in range(200):
        out += [f"[table{i}]", f"value = {i}"]
    return ("\n".join(out) + "\n").encode()


def idx(code, shape, body):
    return bytes([0, 0, code, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape) + body


def idx_seeds():
    """20,000 u8 labels raw, and 500 28x28 u8 images gzip'd."""
    labels = idx(0x08, [20000], bytes((3 * i + 1) % 10 for i in range(20000)))
    images = idx(0x08, [500, 28, 28], bytes((i * 7 + i // 784) % 256 for i in range(500 * 784)))
    return {"many_labels.idx1": labels, "many_images.idx3.gz": gzip.compress(images, mtime=0)}


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(number, value):
    """A varint field for an int, a length-delimited one for bytes or str."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint((number << 3) | 2) + varint(len(value)) + value


def tensor(name, values):
    """TensorProto: f32 of shape [len(values)] in raw_data."""
    return field(1, len(values)) + field(2, 1) + field(8, name) + field(9, struct.pack("<%df" % len(values), *values))


def value_info(name, n):
    """ValueInfoProto: a f32 tensor of shape [n]."""
    shape = field(1, field(1, n))  # TensorShapeProto.dim { dim_value }
    return field(1, name) + field(2, field(1, field(1, 1) + field(2, shape)))


def model(graph):
    return field(1, 8) + field(8, field(2, 13)) + field(7, graph)  # ir_version 8, opset 13


def proto_seed():
    """500 nodes, each with two attributes, and 500 small initializers (a reader seed: the graph
    need not make sense)."""
    graph = b""
    for i in range(500):
        attrs = field(5, field(1, "axis") + field(3, i % 4) + field(20, 2))
        attrs += field(5, field(1, "pads") + field(8, bytes([1, 2, 3, 4])) + field(20, 7))
        graph += field(1, field(1, f"v{i}") + field(1, f"w{i}") + field(2, f"v{i + 1}") +
                       field(3, f"node{i}") + field(4, "Add") + attrs)
        graph += field(5, tensor(f"w{i}", [float(i)]))
    graph += field(11, value_info("v0", 1)) + field(12, value_info("v500", 1))
    return model(graph)


def import_seed(n=400):
    """A valid model: x (f32 [4]) through n nodes, Neg and Abs in turn, so the output is |x|; and
    its input. Returns (model, input, expected output)."""
    graph = b""
    for i in range(n):
        graph += field(1, field(1, f"x{i}") + field(2, f"x{i + 1}") + field(4, "Neg" if i % 2 == 0 else "Abs"))
    graph += field(11, value_info("x0", 4)) + field(12, value_info(f"x{n}", 4))
    x = [-2.0, -0.5, 0.25, 3.0]
    return model(graph), tensor("x0", x), tensor(f"x{n}", [abs(v) for v in x])


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{os.path.relpath(path)}: {len(data)} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--node-test", help="also write the importer seed as an ONNX node test here")
    a = ap.parse_args()
    write(os.path.join(SEEDS, "config", "many_entries.toml"), config_seed())
    write(os.path.join(SEEDS, "manifest", "many_entries.toml"), manifest_seed())
    for name, data in idx_seeds().items():
        write(os.path.join(SEEDS, "idx", name), data)
    write(os.path.join(SEEDS, "onnx_proto", "many_nodes.onnx"), proto_seed())
    m, x, y = import_seed()
    # fuzz_onnx_import's layout: records of [u32 little-endian length][bytes], the model first.
    write(os.path.join(SEEDS, "onnx_import", "many_nodes"),
          b"".join(struct.pack("<I", len(p)) + p for p in (m, x)))
    if a.node_test:
        folder = os.path.join(a.node_test, "test_many_nodes")
        write(os.path.join(folder, "model.onnx"), m)
        write(os.path.join(folder, "test_data_set_0", "input_0.pb"), x)
        write(os.path.join(folder, "test_data_set_0", "output_0.pb"), y)


if __name__ == "__main__":
    main()
