#!/usr/bin/env python3
"""The layering of Wick, checked over include lines and CMake link lines (README: the layout).

Every source file belongs to a layer by its folder; a layer may use only the layers it is allowed
(the ones below it). An include names a layer by its path: <wick/sdk/...>, <wick/wick_plugin.h> and
<wick/wick_ops.h> are the SDK's; <wick/nn/...> nn's; <wick/onnx/...> onnx's; <wick/gpu/...>
gpu-common's (a plugin library); any other <wick/...> is the core's. A quoted include must resolve
inside the including layer's own folder (a layer never reaches into another's private headers), and
the core, nn and onnx include no device library (the core knows no device). In CMake, a layer's
target_link_libraries may name only Wick targets of the layers it is allowed.

Usage: check_layers.py [ROOT]        check the tree (default: the repository this script is in)
       check_layers.py --self-test   plant one violation of each kind in a scratch tree and make
                                     sure each is reported (the check can fail)
Exit status 0 when the layering holds, 1 with one line per violation ("file:line: ...") when not.
"""
import os
import re
import sys
import tempfile

# Layer -> the folders it is made of (relative to the root).
LAYER_DIRS = {
    "sdk": ["sdk"],
    "core": ["core"],
    "nn": ["nn"],
    "onnx": ["onnx"],
    "tokenizers": ["tokenizers"],
    "models": ["models"],
    # The NCCL module: a library of its own that the distributed layer loads with dlopen; it knows
    # CUDA (a device), which the layer itself must not (listed first: its folder is inside).
    "distributed-nccl": ["distributed/nccl"],
    "distributed": ["distributed"],
    "plugins": ["plugins"],
    "conformance": ["conformance"],
    "tools": ["tools", "examples", "bench", "tests", "fuzz"],
}
# Layer -> the layers it may use (itself included). Order of the layers above the core: nn, onnx,
# models (on nn and tokenizers; tokenizers is text only and uses no other layer), then what builds
# on all of them (conformance, tools, tests).
ALLOWED = {
    "sdk": {"sdk"},
    "core": {"sdk", "core"},
    "nn": {"sdk", "core", "nn"},
    "onnx": {"sdk", "core", "nn", "onnx"},
    "tokenizers": {"tokenizers"},
    "models": {"sdk", "core", "nn", "tokenizers", "models"},
    # Collectives and data parallelism on nn's parameters and data sets; MPI only in its module.
    "distributed": {"sdk", "core", "nn", "distributed"},
    # The SDK's dtype numbers and the distributed layer's private C table (nccl_abi.h), nothing else.
    "distributed-nccl": {"sdk", "distributed-nccl"},
    "plugins": {"sdk", "plugins"},
    "conformance": {"sdk", "core", "nn", "onnx", "conformance"},
    "tools": {"sdk", "core", "nn", "onnx", "tokenizers", "models", "distributed", "plugins", "conformance",
              "tools"},
}
# Quoted includes that deliberately cross into another layer's private headers, with the reason.
PRIVATE_EXCEPTIONS = {
    # cpu-onednn's vector math is tested on every ISA the CPU has, its kernels called directly.
    ("tests/test_vector_math.cpp", "vector_math.hpp"): "plugins",
    # The isolated plugin's child process is the host's other half: it speaks the host's protocol.
    ("tools/plugin-host/main.cpp", "host/isolated_plugin.hpp"): "core",
    # conv's gradient ops are checked against the gradients the core composes where a device lacks them.
    ("tests/test_conv_grad.cpp", "tensor/autograd_rules.hpp"): "core",
    # The isolation tests' hostile child relays the real server and breaks its wire protocol.
    ("tests/fixtures/hostile_plugin_host.cpp", "host/isolated_plugin.hpp"): "core",
    ("tests/fixtures/hostile_plugin_host.cpp", "host/isolation_wire.hpp"): "core",
    # The fuzz targets build the readers from their own sources, instrumented.
    ("fuzz/fuzz_manifest.cpp", "host/manifest.hpp"): "core",
    # The linear-time test times the manifest reader alone, as fuzz_manifest drives it.
    ("tests/test_parsers_linear.cpp", "host/manifest.hpp"): "core",
    # The NCCL module implements the distributed layer's private C table between the two.
    ("distributed/nccl/nccl_module.cpp", "nccl_abi.h"): "distributed",
}
# Device libraries: no layer that knows no device includes these.
DEVICE_HEADERS = re.compile(r"^(CL/|cuda|cublas|nvrtc|nccl|dnnl|oneapi/)")
DEVICE_FREE = {"sdk", "core", "nn", "onnx", "tokenizers", "models", "distributed"}
# Wick's CMake targets -> the layer each belongs to.
TARGETS = {
    "Wick::SDK": "sdk", "wick_sdk": "sdk",
    "Wick::wick": "core", "wick": "core",
    "Wick::nn": "nn", "wick_nn": "nn",
    "Wick::onnx": "onnx", "wick_onnx": "onnx",
    "Wick::tokenizers": "tokenizers", "wick_tokenizers": "tokenizers",
    "Wick::models": "models", "wick_models": "models",
    "Wick::distributed": "distributed", "wick_distributed": "distributed",
    "wick_gpu_common": "plugins",
    "wick_conformance": "conformance",
}
SOURCE_EXT = (".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LINK = re.compile(r"target_link_libraries\s*\(([^)]*)\)", re.S)


def layer_of_path(rel):
    for layer, dirs in LAYER_DIRS.items():
        for d in dirs:
            if rel == d or rel.startswith(d + "/"):
                return layer, d
    return None, None


def layer_of_include(name):
    if not name.startswith("wick/"):
        return None
    rest = name[len("wick/"):]
    if rest.startswith("sdk/") or rest in ("wick_plugin.h", "wick_ops.h"):
        return "sdk"
    if rest.startswith("nn/"):
        return "nn"
    if rest.startswith("onnx/"):
        return "onnx"
    if rest.startswith("tokenizers/"):
        return "tokenizers"
    if rest.startswith("models/"):
        return "models"
    if rest.startswith("distributed/"):
        return "distributed"
    if rest.startswith("gpu/"):
        return "plugins"
    return "core"


def files(root):
    all_dirs = {d for dirs in LAYER_DIRS.values() for d in dirs}
    for layer, dirs in LAYER_DIRS.items():
        for d in dirs:
            top = os.path.join(root, d)
            for dirpath, dirnames, names in os.walk(top):
                # A folder that is another layer's (distributed/nccl inside distributed) is that
                # layer's alone.
                dirnames[:] = [n for n in dirnames if not n.startswith(".") and n != "build" and
                               os.path.relpath(os.path.join(dirpath, n), root) not in all_dirs]
                for n in sorted(names):
                    yield layer, d, os.path.join(dirpath, n)


# Folders whose headers a library exports through its CMake include directories although they are
# included with quotes: conformance/src is the interface of wick_conformance (the CLI builds on it).
PUBLIC_QUOTED = {"conformance/src": "conformance"}


def homes(root, layer, path):
    """The folders a quoted include of `path` may resolve into: a plugin's own folder for plugins
    (plugins/<name>), else every folder of the file's layer."""
    parts = os.path.relpath(path, root).split("/")
    if parts[0] == "plugins" and len(parts) > 2:
        return [os.path.join(root, "plugins", parts[1])]
    return [os.path.join(root, d) for d in LAYER_DIRS[layer]]


def inside(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder + os.sep)


def check_quoted(root, layer, path, name):
    """None when `"name"` resolves inside the file's own layer (or a public folder of a layer it may
    use), else the reason."""
    rel = os.path.relpath(path, root)
    if (rel, name) in PRIVATE_EXCEPTIONS:
        return None
    own = homes(root, layer, path)
    # Where a quoted include is found: the file's folder, then the private include directories the
    # CMake files give their targets (a layer's src/ and include/).
    candidates = [os.path.join(os.path.dirname(path), name)]
    for home in own:
        candidates += [os.path.join(home, "src", name), os.path.join(home, "include", name)]
    for folder in PUBLIC_QUOTED:
        candidates.append(os.path.join(root, folder, name))
    for c in candidates:
        if not os.path.exists(c):
            continue
        if any(inside(c, home) for home in own):
            return None
        for folder, owner in PUBLIC_QUOTED.items():
            if inside(c, os.path.join(root, folder)) and owner in ALLOWED[layer]:
                return None
        return "quoted include \"%s\" resolves outside its layer, to %s" % (
            name, os.path.relpath(os.path.realpath(c), root))
    # Not found where the build looks: perhaps another layer's private header (a path the CMake
    # files of this layer should not make visible).
    for other in ("core/src", "nn/src", "onnx/src", "tokenizers/src", "models/src", "distributed/src", "plugins"):
        for dirpath, _, names in os.walk(os.path.join(root, other)):
            if os.path.exists(os.path.join(dirpath, name)):
                return "quoted include \"%s\" is another layer's private header (%s)" % (
                    name, os.path.relpath(os.path.join(dirpath, name), root))
    return None


def check_sources(root):
    problems = []
    for layer, layer_dir, path in files(root):
        if not path.endswith(SOURCE_EXT):
            continue
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, name = m.groups()
                where = "%s:%d" % (rel, lineno)
                if kind == "<":
                    used = layer_of_include(name)
                    if used and used not in ALLOWED[layer]:
                        problems.append("%s: %s (layer %s) includes <%s> of layer %s, above it or beside it"
                                        % (where, rel, layer, name, used))
                    if layer in DEVICE_FREE and DEVICE_HEADERS.match(name):
                        problems.append("%s: %s (layer %s, which knows no device) includes the device "
                                        "library header <%s>" % (where, rel, layer, name))
                else:
                    why = check_quoted(root, layer, path, name)
                    if why:
                        problems.append("%s: %s (layer %s): %s" % (where, rel, layer, why))
    return problems


def check_cmake(root):
    problems = []
    for layer, layer_dir, path in files(root):
        if os.path.basename(path) != "CMakeLists.txt":
            continue
        rel = os.path.relpath(path, root)
        text = open(path, encoding="utf-8").read()
        for m in LINK.finditer(text):
            words = m.group(1).split()
            lineno = text.count("\n", 0, m.start()) + 1
            for w in words[1:]:
                used = TARGETS.get(w)
                if used and used not in ALLOWED[layer]:
                    problems.append("%s:%d: %s (layer %s) links %s of layer %s" % (rel, lineno, words[0], layer, w, used))
    return problems


def check(root):
    return check_sources(root) + check_cmake(root)


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def self_test():
    planted = {
        "nn/src/bad_upward.cpp": '#include <wick/onnx/lower.hpp>\n',
        "core/src/tensor/bad_nn.cpp": '#include <wick/nn/nn.hpp>\n',
        "sdk/include/wick/sdk/bad.hpp": '#include <wick/tensor.hpp>\n',
        "plugins/x/src/bad_core.cpp": '#include <wick/tensor.hpp>\n',
        "nn/src/bad_private.cpp": '#include "tensor/storage.hpp"\n',
        "core/src/host/bad_device.cpp": '#include <CL/cl.h>\n',
        "nn/CMakeLists.txt": 'target_link_libraries(wick_nn PUBLIC Wick::wick Wick::onnx)\n',
    }
    with tempfile.TemporaryDirectory() as root:
        write(root, "core/src/tensor/storage.hpp", "#pragma once\n")
        write(root, "core/src/tensor/good.cpp", '#include "tensor/storage.hpp"\n#include <wick/sdk/ops.hpp>\n')
        write(root, "nn/src/good.cpp", '#include <wick/tensor.hpp>\n#include <wick/nn/nn.hpp>\n')
        clean = check(root)
        if clean:
            print("self-test: a clean tree was reported:\n  " + "\n  ".join(clean))
            return 1
        for rel, text in planted.items():
            write(root, rel, text)
        found = check(root)
        missed = [rel for rel in planted if not any(p.startswith(rel + ":") for p in found)]
        if missed:
            print("self-test: planted violations not reported: " + ", ".join(missed))
            return 1
    print("self-test: all %d planted violations reported, the clean tree passed" % len(planted))
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("layers: %d violation(s)" % len(problems))
        return 1
    print("layers: every include and link goes to a layer below or to the same layer")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
