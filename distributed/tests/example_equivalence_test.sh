#!/usr/bin/env bash
# `mpirun -n 2 wick-example-mlp --distributed` ends with the weights of one process on the same
# global batch: 8 steps of Adam (--limit 512, global batch 64) on Fashion-MNIST, then every tensor
# of the two --save files within 1e-6 relative in norm (||a - b|| / ||b||; measured 5.2e-7 on
# cpu-onednn). Not element by element: a first-layer weight whose gradient is near Adam's eps
# (1e-8; a pixel almost always 0) moves by lr * g / (|g| + eps), which turns the f32 rounding of
# a differently split batch into up to 0.5% of a step (4.7e-6 once in 200704 weights, measured).
# The per-step, element-wise check on a small model is wick-distributed-dp-check.
#   example_equivalence_test.sh BIN_DIR DEVICE MPIRUN [MPIRUN ARGS...]
set -euo pipefail
bin=$1 device=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=(--device "$device" --epochs 1 --limit 512 --batch-size 64 --no-eval --no-progress --seed 3)
"$bin/wick-example-mlp" "${args[@]}" --save "$out/one.safetensors" >"$out/one.log" 2>&1 ||
  { echo "FAILED: one process:"; tail -5 "$out/one.log"; exit 1; }
"$@" "$bin/wick-example-mlp" "${args[@]}" --distributed --save "$out/two.safetensors" >"$out/two.log" 2>&1 ||
  { echo "FAILED: two ranks:"; tail -5 "$out/two.log"; exit 1; }
python3 - "$out/one.safetensors" "$out/two.safetensors" <<'PY'
import array, json, math, struct, sys

def read(path):  # name -> f32 values (the example saves f32 only)
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    out = {}
    for k, v in header.items():
        assert v["dtype"] == "F32", (k, v["dtype"])
        out[k] = array.array("f", data[v["data_offsets"][0]:v["data_offsets"][1]])
    return out

one, two = read(sys.argv[1]), read(sys.argv[2])
assert one.keys() == two.keys(), (sorted(one), sorted(two))
worst = 0.0
for k in sorted(one):
    diff = math.sqrt(sum((a - b) ** 2 for a, b in zip(one[k], two[k])))
    rel = diff / max(math.sqrt(sum(a * a for a in one[k])), 1e-30)
    worst = max(worst, rel)
    if rel > 1e-6:
        print(f"FAILED: {k} differs by {rel:.3g} relative (in norm) between one process and two ranks")
        sys.exit(1)
print(f"ok: {len(one)} tensors of the 2-rank MLP within {worst:.3g} relative (in norm) of one process after 8 steps")
PY
