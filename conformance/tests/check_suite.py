#!/usr/bin/env python3
"""ctest checks of `wick conformance` (conformance/tests/CMakeLists.txt names each one).

  check_suite.py isolation WICK CRASHY_MANIFEST   a segfaulting op gives CRASH, a hanging one
                                                  TIMEOUT, the rest correct results, run goes on
  check_suite.py decline WICK DECLINE_MANIFEST    a plugin that declines every op scores 0%
  check_suite.py reports WICK                     the four report files are written, well formed
  check_suite.py regenerate PYTHON GENERATOR DATA golden data regenerate byte-identically
  check_suite.py ci WICK BACKENDS                 the CI run: reports exist, no first-party CRASH
  check_suite.py fuzz WICK ONNX_DIR               truncated and bit-flipped ONNX folders (and a
                                                  folder name that is not UTF-8): per-case results,
                                                  no crash of a worker or of the supervisor
  check_suite.py grad WICK BACKENDS OPS_H DECLINE_MANIFEST
                                                  --mode grad: no FAIL/CRASH, every differentiable
                                                  op of the table (read from wick_ops.h) checked,
                                                  a declining plugin UNSUPPORTED, never PASS
  check_suite.py hostile WICK ONNX_DIR            FIFOs, /dev/zero, files over the 2 GiB bound and
                                                  symlink loops in an --onnx-dir: SKIP/FAIL naming
                                                  the file, no hang; a missing --onnx-dir an error
  check_suite.py hostile_paths WICK               a FIFO or /dev/zero as --tolerances, --expectations,
                                                  ... or a golden file: an error naming it, no hang
  check_suite.py diskfull WICK                    writes failing (ulimit -f): an error naming the
                                                  file, exit non-zero, no truncated report left
"""
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    print(p.stdout[-6000:])
    return p


def results(report):
    with open(os.path.join(report, "results.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)
    print("ok:", what)


def well_formed(report):
    rs = results(report)
    check(len(rs) > 0, "results.jsonl has results, each a JSON object")
    ET.parse(os.path.join(report, "junit.xml"))
    print("ok: junit.xml parses as XML")
    html = open(os.path.join(report, "report.html")).read()
    check(html.startswith("<!DOCTYPE html>") and "</html>" in html and "<table" in html and "sortable" in html,
          "report.html is a complete page with the sortable matrix")
    check(os.path.getsize(os.path.join(report, "matrix.txt")) > 0, "matrix.txt is written")
    return rs


def isolation(wick, manifest):
    with tempfile.TemporaryDirectory() as report:
        listed = run([wick, "conformance", "--backend", manifest, "--suite", "golden", "--op", "copy,neg,add,sub",
                      "--dtype", "f32", "--list"]).stdout.split("\n")
        ids = [line.split("\t")[0] for line in listed if line.startswith("golden/")]
        p = run([wick, "conformance", "--backend", manifest, "--suite", "golden", "--op", "copy,neg,add,sub",
                 "--dtype", "f32", "--timeout", "1", "--report", report, "--fail-on", "never"])
        check(p.returncode == 0, "the run completes despite crashes and hangs")
        rs = well_formed(report)
        check(sorted(r["case"] for r in rs) == sorted(ids), "every listed case has exactly one result")
        by_op = {}
        for r in rs:
            by_op.setdefault(r["op"], set()).add(r["status"])
        check(by_op["neg"] == {"CRASH"}, "every neg case (SIGSEGV in the plugin) is CRASH")
        check(by_op["sub"] == {"TIMEOUT"}, "every sub case (the plugin never returns) is TIMEOUT")
        check(by_op["add"] == {"PASS"}, "add, run after the crashes, passes")
        check(by_op["copy"] == {"PASS"}, "copy passes")
        crash = [r for r in rs if r["status"] == "CRASH"][0]
        check("signal 11" in crash["message"] and crash["repro"].endswith(crash["case"]),
              "a crash names the signal and carries a one-line repro")
    # The plugin found by name through --plugin-path: the repro line carries the option and runs
    # as printed, from another directory, selecting exactly that case again.
    with tempfile.TemporaryDirectory() as report, tempfile.TemporaryDirectory() as elsewhere:
        name = os.path.basename(manifest).replace(".wick-plugin.toml", "")
        p = run([wick, "conformance", "--plugin-path", os.path.dirname(manifest), "--backend", name,
                 "--suite", "golden", "--op", "neg", "--dtype", "f32", "--timeout", "1", "--report", report,
                 "--fail-on", "never"])
        crash = [r for r in results(report) if r["status"] == "CRASH"][0]
        check("--plugin-path" in crash["repro"], "the repro line carries --plugin-path")
        again = os.path.join(elsewhere, "again")
        p = run(["/bin/sh", "-c", crash["repro"] + " --report " + again + " --fail-on never"], cwd=elsewhere)
        rerun = results(again)
        check([r["case"] for r in rerun] == [crash["case"]] and rerun[0]["status"] == "CRASH",
              "the repro line, run as printed elsewhere, reruns that one case and crashes again")


def orphans(wick, manifest):
    """A supervisor killed with SIGKILL leaves no worker behind (the hanging `sub` would keep one)."""
    import signal
    import time
    with tempfile.TemporaryDirectory() as report:
        p = subprocess.Popen([wick, "conformance", "--backend", manifest, "--suite", "golden", "--op", "sub",
                              "--dtype", "f32", "--timeout", "120", "--report", report],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        def children():
            out = subprocess.run(["pgrep", "-P", str(p.pid)], stdout=subprocess.PIPE, text=True).stdout
            return [int(x) for x in out.split()]
        def alive(pid):
            try:
                os.kill(pid, 0)
                return open("/proc/%d/stat" % pid).read().split()[2] != "Z"
            except (OSError, IOError):
                return False
        for _ in range(100):  # wait for the worker to be inside the hanging op
            if children():
                break
            time.sleep(0.1)
        workers = children()
        try:
            check(workers != [], "a worker runs the hanging case")
        finally:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
        for _ in range(50):
            if not any(alive(w) for w in workers):
                break
            time.sleep(0.1)
        check(not any(alive(w) for w in workers), "after the supervisor is killed, its workers are gone too")
    # SIGINT instead: the run stops at once, its workers too, and the reports say it was cut short.
    with tempfile.TemporaryDirectory() as report:
        p = subprocess.Popen([wick, "conformance", "--backend", manifest, "--suite", "golden", "--op", "copy,sub",
                              "--dtype", "f32", "--timeout", "120", "--report", report],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(100):
            if os.path.exists(os.path.join(report, "results.jsonl")) and \
               subprocess.run(["pgrep", "-P", str(p.pid)], stdout=subprocess.PIPE).stdout:
                break
            time.sleep(0.1)
        time.sleep(1)  # inside the hanging sub by now (copy cases run first)
        os.kill(p.pid, signal.SIGINT)
        try:
            out, _ = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            check(False, "an interrupted run ends within 20 s")
        check(p.returncode == 130, "an interrupted run exits 130 (got %s)" % p.returncode)
        check("CUT SHORT: interrupted by SIGINT" in out, "the console says the run was cut short")
        check("CUT SHORT" in open(os.path.join(report, "matrix.txt")).read() and
              "CUT SHORT" in open(os.path.join(report, "report.html")).read(),
              "matrix.txt and report.html say so too")
        check(len(results(report)) > 0, "the results that ran are kept")


def decline(wick, manifest):
    with tempfile.TemporaryDirectory() as report:
        p = run([wick, "conformance", "--backend", manifest, "--suite", "golden", "--report", report])
        check(p.returncode == 0, "declining is not a crash")
        rs = results(report)
        check(len(rs) > 1000 and all(r["status"] == "UNSUPPORTED" for r in rs), "every case is UNSUPPORTED")
        check("golden  0.0%" in p.stdout, "the score is 0%, not 100%")


def reports(wick):
    with tempfile.TemporaryDirectory() as report:
        p = run([wick, "conformance", "--backend", "cpu-onednn", "--suite", "golden,diff,onnx", "--op", "add,Add",
                 "--report", report])
        check(p.returncode == 0, "the run succeeds")
        rs = well_formed(report)
        check({r["source"] for r in rs} >= {"golden", "onnx"}, "golden and ONNX cases are reported")
    with tempfile.TemporaryDirectory() as report:
        p = run([wick, "conformance", "--backend", "cpu-onednn", "--op", "no_such_op", "--report", report])
        check(p.returncode == 0 and "no case matches the selection" in p.stdout,
              "a selection of zero cases says so and exits 0")
        check(results(report) == [], "results.jsonl is empty")
        ET.parse(os.path.join(report, "junit.xml"))
        html = open(os.path.join(report, "report.html")).read()
        check(html.startswith("<!DOCTYPE html>") and "</html>" in html, "report.html is still a complete page")
    for other in ("pytorch-operator", "pytorch-converted"):
        folder = "/usr/share/libonnx-testdata/data/" + other
        if not os.path.isdir(folder):
            continue
        with tempfile.TemporaryDirectory() as report:
            run([wick, "conformance", "--backend", "cpu-onednn", "--suite", "onnx", "--onnx-dir", folder,
                 "--report", report])
            rs = results(report)
            bad = [r["case"] + ": " + r["status"] + " " + r.get("message", "") for r in rs if r["status"] != "PASS"]
            check(len(rs) == len(os.listdir(folder)) and not bad,
                  "every %s folder runs and passes on cpu-onednn (%d): %s" % (other, len(rs), bad[:3]))
            multi = [r for r in rs if "," in r["op"]]
            matrix = open(os.path.join(report, "matrix.txt")).read()
            if multi:
                types = multi[0]["op"][5:].split(",")
                check(all(("onnx:" + t) in matrix for t in types),
                      "a multi-node graph (%s) is filed under each of its op types" % multi[0]["case"])
    real = "/usr/share/libonnx-testdata/data/real"
    if os.path.isdir(real):
        with tempfile.TemporaryDirectory() as report, tempfile.TemporaryDirectory() as elsewhere:
            p = run([wick, "conformance", "--backend", "cpu-onednn", "--suite", "onnx", "--onnx-dir", real,
                     "--report", report])
            rs = results(report)
            check(len(rs) > 0 and all(r["status"] == "SKIP" and "no model.onnx" in r["message"] for r in rs),
                  "folders without a model are SKIP with the reason, not FAIL")
            again = os.path.join(elsewhere, "again")
            p = run(["/bin/sh", "-c", rs[0]["repro"] + " --report " + again], cwd=elsewhere)
            check([r["case"] for r in results(again)] == [rs[0]["case"]],
                  "a repro line with --onnx-dir runs as printed and selects that case")


def numpy_simd_levels(python):
    """NumPy's dispatched SIMD features that this CPU has, grouped into the settings of
    NPY_DISABLE_CPU_FEATURES that make it act as a machine one level lower: without AVX-512 (an
    AVX2 machine), and without anything above its baseline (an SSE machine)."""
    probe = ("from numpy.core._multiarray_umath import __cpu_features__ as f, __cpu_dispatch__ as d\n"
             "print(' '.join(x for x in d if f.get(x)))")
    p = subprocess.run([python, "-c", probe], stdout=subprocess.PIPE, text=True)
    have = p.stdout.split() if p.returncode == 0 else []
    levels = []
    avx512 = [x for x in have if x.startswith("AVX512")]
    if avx512:
        levels.append(("without AVX-512", avx512))
    if have:
        levels.append(("baseline only", have))
    return levels


def regenerate(python, generator, data):
    """The golden data regenerate byte-identically, also with NumPy held to lower SIMD levels (the
    code paths NumPy takes on CPUs without AVX-512 or AVX2), so the bytes do not depend on the CPU."""
    names = sorted(os.listdir(data))
    settings = [("this CPU", None)] + numpy_simd_levels(python)
    for label, disabled in settings:
        env = dict(os.environ)
        env.pop("NPY_DISABLE_CPU_FEATURES", None)
        if disabled:
            env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
        with tempfile.TemporaryDirectory() as out:
            p = run([python, generator, out], env=env)
            check(p.returncode == 0, "generate.py runs (%s)" % label)
            check(names == sorted(os.listdir(out)), "the same files (%s)" % label)
            match, mismatch, errors = filecmp.cmpfiles(data, out, names, shallow=False)
            check(not mismatch and not errors,
                  "every golden file regenerates byte-identically, NumPy SIMD: %s (differ: %s)" % (label, mismatch))


def fuzz(wick, onnx_dir):
    import random
    import shutil
    rng = random.Random(20261201)  # the same mutations every run
    folders = sorted(f for f in os.listdir(onnx_dir) if f.startswith("test_"))[::12]
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as report:
        base = os.path.join(work, "node")
        os.mkdir(base)
        count = 0
        for i, f in enumerate(folders):
            for variant in ("truncate", "flip"):
                d = os.path.join(base, "test_fuzz%03d_%s" % (i, variant))
                shutil.copytree(os.path.join(onnx_dir, f), d)
                files = [os.path.join(root, x) for root, _, xs in os.walk(d) for x in xs
                         if x == "model.onnx" or x.endswith(".pb")]
                target = rng.choice(sorted(files))
                data = bytearray(open(target, "rb").read())
                if data:
                    if variant == "truncate":
                        data = data[:rng.randrange(len(data))]
                    else:
                        for _ in range(rng.randint(1, 8)):
                            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                open(target, "wb").write(bytes(data))
                count += 1
        # Four bytes once found to over-read the protobuf reader, and a name that is not UTF-8.
        os.mkdir(os.path.join(base, "test_fuzz_overread"))
        open(os.path.join(base, "test_fuzz_overread", "model.onnx"), "wb").write(bytes([0x10, 0x07, 0x28, 0x05]))
        odd = os.path.join(base.encode(), b"test_fuzz_\xff\xfe")
        shutil.copytree(os.path.join(onnx_dir, folders[0]), odd.decode("utf-8", "surrogateescape"))
        count += 2
        p = run([wick, "conformance", "--backend", "cpu-onednn", "--suite", "onnx", "--onnx-dir", base,
                 "--report", report, "--timeout", "20", "--fail-on", "crash", "--jobs", "2"])
        check(p.returncode == 0, "the run completes with no CRASH or TIMEOUT (%d mutated folders)" % count)
        rs = results(report)
        check(len(rs) == count, "every folder has exactly one result (%d)" % len(rs))
        statuses = {r["status"] for r in rs}
        check(statuses <= {"PASS", "FAIL", "SKIP", "UNSUPPORTED"}, "statuses: %s" % sorted(statuses))
        check(any(r["status"] == "SKIP" and r["message"].startswith("unreadable:") for r in rs),
              "an unreadable file is SKIP saying so")


def patient_config(folder):
    """A config that gives each plugin a minute to initialize: the CI and grad runs test the suite,
    not the probe deadline, and PoCL's start-up under ASan on a busy machine has taken over the
    default 5 s (its deadline has tests of its own)."""
    path = os.path.join(folder, "patient.toml")
    with open(path, "w") as f:
        f.write("[plugins]\nprobe_timeout_ms = 60000\n")
    return path


def ci(wick, backends):
    with tempfile.TemporaryDirectory() as report:
        p = run([wick, "--config", patient_config(report), "conformance", "--backend", backends, "--report", report, "--fail-on", "crash"])
        well_formed(report)
        check(p.returncode == 0, "no CRASH or TIMEOUT on the first-party backends (FAIL and UNSUPPORTED are reported, not fatal)")
        # The ONNX node tests hold their ground (issue 13: at least 900 of 932 run and pass, none
        # fails) on every first-party backend.
        if os.path.isdir("/usr/share/libonnx-testdata/data/node"):
            rs = [json.loads(line) for line in open(os.path.join(report, "results.jsonl"))]
            for b in backends.split(","):
                onnx = [r for r in rs if r["backend"] == b and r["source"] == "onnx"]
                passed = sum(r["status"] == "PASS" for r in onnx)
                failed = [r["case"] for r in onnx if r["status"] in ("FAIL", "CRASH", "TIMEOUT")]
                check(passed >= 900 and not failed,
                      "%s: %d ONNX node folders pass (at least 900), none fails (%s)" % (b, passed, failed[:3]))


# Ops whose backward throws by design (core/include/wick/autograd.hpp): their grad rows may hold
# only XFAIL cases. Every other differentiable op of the table must be checked.
BACKWARD_THROWS = {"cummax", "cummin", "window_prod", "window_scatter_max", "window_scatter_min"}
# Ops autograd never records (an optimizer step): their rows are one SKIP with the reason.
NOT_DIFFERENTIATED = {"adam_update", "conv_grad_input", "conv_grad_weight", "matmul_quant"}


def differentiable_ops(ops_h):
    """Ops of wick_ops.h that can carry a gradient: an input, defined for floats, a float output."""
    import re
    ops = []
    for m in re.finditer(r"^\s*X\(([^)]*)\)", open(ops_h).read(), re.M):
        f = [x.strip() for x in m.group(1).split(",")]
        name, in_min, dtypes, out = f[2], int(f[4]), f[8], f[9]
        if in_min >= 1 and dtypes not in ("INT", "INT_BOOL", "U8") and out not in ("BOOL", "INDEX", "U8"):
            ops.append(name)
    return ops


def grad(wick, backends, ops_h, decline_manifest):
    table = differentiable_ops(ops_h)
    check(len(table) > 50, "wick_ops.h lists %d differentiable ops" % len(table))
    must_check = [op for op in table if op not in BACKWARD_THROWS | NOT_DIFFERENTIATED]
    with tempfile.TemporaryDirectory() as report:
        p = run([wick, "--config", patient_config(report), "conformance", "--backend", backends,
                 "--mode", "grad", "--report", report,
                 "--fail-on", "fail"])
        rs = well_formed(report)
        check(p.returncode == 0, "exit 0 with --fail-on fail: no FAIL, CRASH, TIMEOUT or XPASS")
        bad = [r for r in rs if r["status"] not in ("PASS", "XFAIL")
               and not (r["status"] == "SKIP" and r["op"] in NOT_DIFFERENTIATED)]
        check(bad == [], "every grad case is PASS or XFAIL, or SKIP for an op autograd never records "
                         "(%d others: %s)" % (len(bad), bad[:3]))
        check(all(r["source"] == "grad" and r["dtype"] == "f64" and r["case"].startswith("grad/") for r in rs),
              "every result is a grad case in f64")
        check(all("has no backward rule" in r["message"] for r in rs if r["status"] == "XFAIL"),
              "every XFAIL is a backward that throws by design, saying so")
        for backend in backends.split(","):
            mine = [r for r in rs if r["backend"] == backend]
            by_op = {}
            for r in mine:
                by_op.setdefault(r["op"], []).append(r["status"])
            checked = [op for op, st in by_op.items() if "PASS" in st and set(st) <= {"PASS", "XFAIL"}]
            missing = [op for op in must_check if op not in checked]
            check(missing == [], "%s: every differentiable op but the throwing ones has passing grad cases "
                                 "(missing: %s)" % (backend, missing))
            check(len(checked) >= len(must_check),
                  "%s: %d op rows checked >= %d differentiable ops in wick_ops.h (%d float-valued ops "
                  "with inputs, less %d excluded by design)"
                  % (backend, len(checked), len(must_check), len(table), len(table) - len(must_check)))
            xfail_only = {op for op, st in by_op.items() if set(st) == {"XFAIL"}}
            check(xfail_only <= BACKWARD_THROWS, "%s: only the documented ops are XFAIL throughout" % backend)
            check(all(op in by_op for op in table), "%s: every differentiable op has a grad row" % backend)
        for title in ("Gradients: autograd against central differences", "Gradient-checked op rows"):
            check(title in open(os.path.join(report, "matrix.txt")).read(), "matrix.txt has '%s'" % title)
        check("Mode: <b>grad</b>" in open(os.path.join(report, "report.html")).read(), "report.html names the mode")
        # A repro line (non-passing results carry one) reruns its case as printed.
        xf = [r for r in rs if r["status"] == "XFAIL"][0]
        check("--mode grad" in xf["repro"], "a repro line carries --mode grad")
        again = os.path.join(report, "again")
        run(["/bin/sh", "-c", xf["repro"] + " --report " + again + " --fail-on never"])
        rerun = results(again)
        check([(r["case"], r["status"]) for r in rerun] == [(xf["case"], "XFAIL")],
              "the repro line, run as printed, reruns that one case with the same status")
    # A plugin that declines every op: nothing may pass (no silent CPU fallback in the worker).
    with tempfile.TemporaryDirectory() as report:
        run([wick, "conformance", "--backend", decline_manifest, "--mode", "grad", "--op", "copy,matmul,conv,softmax,sort",
             "--report", report, "--fail-on", "never"])
        rs = results(report)
        check(rs != [] and all(r["status"] == "UNSUPPORTED" and "not supported by plugin" in r["message"] for r in rs),
              "on a declining plugin every grad case is UNSUPPORTED with the plugin's reason")


def hostile_folder(base, name, good, model=None):
    """A copy of the node-test folder `good` named `name`; `model(path)` replaces its model.onnx."""
    import shutil
    d = os.path.join(base, name)
    shutil.copytree(good, d)
    if model:
        os.remove(os.path.join(d, "model.onnx"))
        model(os.path.join(d, "model.onnx"))
    return d


def replace(path, make):
    os.remove(path)
    make(path)


def sparse(size):
    def make(path):
        with open(path, "wb") as f:
            f.truncate(size)
    return make


def hostile(wick, onnx_dir):
    """FIFOs, devices, huge files and symlink loops in an --onnx-dir: each folder a SKIP or FAIL
    naming the file, within the per-case timeout; a missing or non-directory --onnx-dir an error."""
    import resource
    good = os.path.join(onnx_dir, "test_abs")
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as report:
        base = os.path.join(work, "node")
        os.mkdir(base)
        hostile_folder(base, "test_a_fifo_model", good, os.mkfifo)  # first: the old code hung here
        hostile_folder(base, "test_devzero_model", good, lambda p: os.symlink("/dev/zero", p))
        hostile_folder(base, "test_huge_model", good, sparse((2 << 30) + 1))
        hostile_folder(base, "test_loop_model", good, lambda p: os.symlink(p, p))
        d = hostile_folder(base, "test_fifo_input", good)
        replace(os.path.join(d, "test_data_set_0", "input_0.pb"), os.mkfifo)
        d = hostile_folder(base, "test_devzero_output", good)
        replace(os.path.join(d, "test_data_set_0", "output_0.pb"), lambda p: os.symlink("/dev/zero", p))
        d = hostile_folder(base, "test_huge_output", good)
        replace(os.path.join(d, "test_data_set_0", "output_0.pb"), sparse((2 << 30) + 1))
        d = hostile_folder(base, "test_loop_data_set", good)
        os.symlink("test_data_set_1", os.path.join(d, "test_data_set_1"))
        os.symlink("test_self", os.path.join(base, "test_self"))
        hostile_folder(base, "test_zz_good", good)
        expect = {"test_a_fifo_model": "model.onnx", "test_devzero_model": "model.onnx",
                  "test_huge_model": "model.onnx", "test_loop_model": "model.onnx",
                  "test_fifo_input": "input_0.pb", "test_devzero_output": "output_0.pb",
                  "test_huge_output": "output_0.pb", "test_loop_data_set": "test_data_set_1",
                  "test_self": "test_self"}

        def limits():  # the old code read /dev/zero to 8 GB: stop it well before
            resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))
        cmd = [wick, "conformance", "--backend", "cpu-onednn", "--suite", "onnx", "--onnx-dir", base,
               "--report", report, "--timeout", "5", "--fail-on", "crash"]
        print("+", " ".join(cmd), flush=True)
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                               preexec_fn=limits)
        except subprocess.TimeoutExpired:
            check(False, "the run ends within 60 s (a FIFO model.onnx must not block it)")
        print(p.stdout[-6000:])
        check(p.returncode == 0, "the run completes with no CRASH or TIMEOUT")
        rs = {r["case"][5:]: r for r in results(report)}
        check(sorted(rs) == sorted(list(expect) + ["test_zz_good"]), "every folder has one result: %s" % sorted(rs))
        check(rs["test_zz_good"]["status"] == "PASS", "the good folder still passes")
        for name, file in sorted(expect.items()):
            r = rs[name]
            check(r["status"] in ("SKIP", "FAIL") and file in r["message"],
                  "%s: %s naming %s: %s" % (name, r["status"], file, r["message"]))
        for name in ("test_a_fifo_model", "test_devzero_model", "test_fifo_input", "test_devzero_output"):
            check("not a regular file" in rs[name]["message"], name + ": refused as not a regular file")
        for name in ("test_huge_model", "test_huge_output"):
            check("2147483648" in rs[name]["message"], name + ": refused over the 2 GiB bound")
    with tempfile.TemporaryDirectory() as work:
        missing = os.path.join(work, "no-such-dir")
        plain = os.path.join(work, "a-file")
        open(plain, "w").close()
        for what, path in (("a missing", missing), ("a non-directory", plain)):
            p = run([wick, "conformance", "--suite", "onnx", "--onnx-dir", path, "--report",
                     os.path.join(work, "r")])
            check(p.returncode != 0 and path in p.stdout, what + " --onnx-dir is an error naming it")


def hostile_paths(wick):
    """A FIFO or a symlink to /dev/zero given as --tolerances, --tolerance-overrides, --expectations
    or a golden data file: an error naming it, at once (never a blocking or unbounded read)."""
    with tempfile.TemporaryDirectory() as work:
        fifo, zero, golden = os.path.join(work, "fifo"), os.path.join(work, "zero"), os.path.join(work, "golden")
        os.mkfifo(fifo)
        os.symlink("/dev/zero", zero)
        os.mkdir(golden)
        os.mkfifo(os.path.join(golden, "add.json"))
        cases = [(flag, path) for flag in ("--tolerances", "--tolerance-overrides", "--expectations")
                 for path in (fifo, zero)] + [("--golden-dir", golden)]
        for flag, path in cases:
            cmd = [wick, "conformance", "--suite", "golden", "--op", "add", flag, path, "--report",
                   os.path.join(work, "r")]
            print("+", " ".join(cmd), flush=True)
            try:
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20)
            except subprocess.TimeoutExpired:
                check(False, "%s %s: ends within 20 s" % (flag, path))
            print(p.stdout[-2000:])
            check(p.returncode != 0 and path in p.stdout and "not a regular file" in p.stdout,
                  "%s %s: an error naming it, refused as not a regular file" % (flag, path))
        report = os.path.join(work, "fifo-report")
        os.mkdir(report)
        os.mkfifo(os.path.join(report, "results.jsonl"))
        try:
            p = run([wick, "conformance", "--suite", "golden", "--op", "add", "--report", report], timeout=20)
        except subprocess.TimeoutExpired:
            check(False, "a FIFO as results.jsonl: ends within 20 s")
        check(p.returncode != 0 and os.path.join(report, "results.jsonl") in p.stdout,
              "a FIFO as results.jsonl is an error naming it, not a wait for a reader")


def limited(wick, limit_kib, args):
    """`wick conformance ARGS` with writes past limit_kib KiB failing (EFBIG, SIGXFSZ ignored)."""
    shell = "trap '' XFSZ; ulimit -f %d; exec \"$0\" \"$@\"" % limit_kib
    return run(["/bin/bash", "-c", shell, wick, "conformance"] + args)


def whole_or_absent(report):
    """Every report under its final name is whole; no temporary file is left behind."""
    names = sorted(os.listdir(report))
    check(all(n in ("results.jsonl", "results.jsonl.incomplete", "junit.xml", "report.html", "matrix.txt",
                    "workers.log") for n in names), "no temporary file left behind: %s" % names)
    path = lambda n: os.path.join(report, n)
    if os.path.exists(path("results.jsonl")):
        text = open(path("results.jsonl")).read()
        check(text.endswith("\n") or text == "", "results.jsonl ends with a whole line")
        [json.loads(line) for line in text.splitlines()]
    if os.path.exists(path("junit.xml")):
        ET.parse(path("junit.xml"))
    if os.path.exists(path("report.html")):
        check(open(path("report.html")).read().rstrip().endswith("</html>"), "report.html is whole")
    if os.path.exists(path("matrix.txt")):
        check(os.path.getsize(path("matrix.txt")) > 0, "matrix.txt is not empty")
    print("ok: what is left under the final names is whole")


def diskfull(wick):
    """A write that fails (RLIMIT_FSIZE standing in for a full disk) is an error naming the file,
    with a non-zero exit, and leaves no truncated report under the final names."""
    select = ["--backend", "cpu-onednn", "--suite", "golden", "--op", "add"]
    with tempfile.TemporaryDirectory() as report:
        p = limited(wick, 4, select + ["--report", report])  # results.jsonl passes 4 KiB
        check(p.returncode != 0, "a failed results.jsonl write exits non-zero (%d)" % p.returncode)
        check(os.path.join(report, "results.jsonl") in p.stdout, "the error names results.jsonl")
        whole_or_absent(report)
    with tempfile.TemporaryDirectory() as report:
        p = limited(wick, 2, select + ["--case", "golden/add/f32/*", "--report", report])  # report.html passes 2 KiB
        check(p.returncode != 0, "a failed report write exits non-zero (%d)" % p.returncode)
        check(os.path.join(report, "report.html") in p.stdout, "the error names report.html")
        whole_or_absent(report)
        check(not os.path.exists(os.path.join(report, "report.html")), "no report.html under its final name")


if __name__ == "__main__":
    what = sys.argv[1]
    globals()[what](*sys.argv[2:])
