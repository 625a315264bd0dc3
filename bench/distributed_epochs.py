#!/usr/bin/env python3
"""Data-parallel training epochs at 1 and 2 ranks on this machine (issue 28): the examples
(build/bin/wick-example-{mlp,cnn}) for one epoch of Fashion-MNIST at global batch 128, no evaluation,
as one process (1 and 2 threads) and as `mpirun -n 2 ... --distributed` (one thread a rank, with the
gradient all-reduce overlapped with backward, and with --no-overlap), interleaved round by round so
that a machine shared with other work slows every contender alike; medians of --reps rounds.
Not a test: the numbers depend on the machine. The epoch time is the example's own (rank 0's in a
job of 2: it includes waiting for the other rank and the all-reduces).

  bench/distributed_epochs.py [--build build] [--reps 7] [--models mlp,cnn] [--limit N]
"""
import argparse
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def epoch_seconds(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit("failed: " + " ".join(cmd) + "\n" + p.stdout[-2000:] + p.stderr[-2000:])
    line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return float(dict(kv.split("=", 1) for kv in line.split()[1:])["epoch_seconds"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--limit", type=int, default=0, help="images per epoch (0: all 60000)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wick-dist-bench-")
    configs = {}
    for threads in (1, 2):
        path = os.path.join(tmp, "threads%d.toml" % threads)
        with open(path, "w") as f:
            f.write("[devices]\npriority = [\"cpu-onednn\"]\n[plugins.cpu-onednn]\nthreads = %d\n" % threads)
        configs[threads] = path
    env = dict(os.environ, WICK_PLUGIN_PATH="", OMPI_MCA_plm_rsh_agent="false", OMP_NUM_THREADS="1")
    mpirun = ["mpirun", "-n", "2", "--oversubscribe", "--allow-run-as-root"]
    limit = ["--limit", str(a.limit)] if a.limit else []
    for model in a.models.split(","):
        exe = os.path.join(a.build, "bin", "wick-example-" + model)
        common = ["--epochs", "1", "--batch-size", "128", "--no-eval", "--no-progress", "--seed", "1"] + limit
        contenders = [
            ("1 rank, 1 thread", [exe, "--config", configs[1]] + common),
            ("1 rank, 2 threads", [exe, "--config", configs[2]] + common),
            ("2 ranks x 1 thread, overlapped", mpirun + [exe, "--config", configs[1], "--distributed"] + common),
            ("2 ranks x 1 thread, after backward",
             mpirun + [exe, "--config", configs[1], "--distributed", "--no-overlap"] + common),
        ]
        times = {name: [] for name, _ in contenders}
        for rep in range(a.reps):
            for name, cmd in contenders:
                times[name].append(epoch_seconds(cmd, env))
            print("%s round %d: %s" % (model, rep + 1, ", ".join("%.2f" % times[n][-1] for n, _ in contenders)),
                  flush=True)
        base = statistics.median(times[contenders[0][0]])
        print("\n%s, %s images, global batch 128, medians of %d:" % (model, a.limit or 60000, a.reps))
        print("| run | s/epoch | speed-up over 1 rank, 1 thread |\n|---|---|---|")
        for name, _ in contenders:
            m = statistics.median(times[name])
            print("| %s | %.2f | %.2fx |" % (name, m, base / m))
        print(flush=True)


if __name__ == "__main__":
    main()
