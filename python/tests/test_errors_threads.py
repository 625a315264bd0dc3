"""Errors and threads from Python (issue 27 item 5): the core's messages as Python exceptions of a
fitting type, a crash of an isolated plugin as an exception (the interpreter goes on), and ops
from several Python threads at once."""
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import wick


def test_shape_errors_are_value_errors_with_the_core_text():
    with pytest.raises(ValueError) as e:
        wick.ones((2, 3)) @ wick.ones((4, 5))
    assert "matmul" in str(e.value) and "[2, 3]" in str(e.value)


def test_dtype_errors_are_type_errors():
    with pytest.raises(TypeError, match="not defined for f32"):
        wick.asarray([1.5, 2.5]).bitwise_and(wick.asarray([1.0, 2.0]))


def test_bad_device_names_are_value_errors():
    with pytest.raises(ValueError, match="no usable device"):
        wick.zeros((2,), device="tpu:7")


def test_isolated_plugin_crash_is_an_exception(tmp_path):
    fixtures = os.environ.get("WICK_CONF_FIXTURE_DIR")
    if not fixtures or not os.path.isdir(fixtures):
        pytest.fail("WICK_CONF_FIXTURE_DIR (the conformance fixtures' plugin folder) is not set: run through ctest")
    config = tmp_path / "wick.toml"
    config.write_text("[plugins.conf-fixture-crashy]\nisolate = true\n")
    # A fresh process: the runtime is configured once per process. The fixture adds correctly and
    # kills its (child) process in neg.
    script = textwrap.dedent("""
        import wick
        dev = wick.Device("conf-fixture-crashy")
        wick.set_strict(True)
        a = wick.asarray([1.5, -2.0], device=dev)
        assert (a + a).tolist() == [3.0, -4.0]
        try:
            (-a).tolist()
        except RuntimeError as e:
            assert "isolated plugin 'conf-fixture-crashy' crashed" in str(e), str(e)
            print("caught:", str(e).splitlines()[0])
        else:
            raise SystemExit("neg did not fail")
        c = wick.asarray([1.0, 2.0], device="cpu")
        assert (c + c).tolist() == [2.0, 4.0]
        print("alive")
    """)
    env = dict(os.environ, WICK_PLUGIN_PATH=fixtures, WICK_CONFIG=str(config), WICK_LOG_LEVEL="error")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "caught:" in r.stdout and r.stdout.rstrip().endswith("alive"), r.stdout


def test_ops_from_eight_threads():
    # Each thread multiplies its own matrices (matmul releases the GIL) and checks hand-worked
    # values: (k * I) @ J = k * J, J all ones.
    n = 64
    errors = []

    def work(k):
        try:
            a = wick.eye(n) * float(k)
            j = wick.ones((n, n))
            for _ in range(20):
                r = a @ j
                got = wick.sum(r).item()
                if got != k * n * n:
                    errors.append((k, got))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append((k, repr(e)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _run(script, **env):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=dict(os.environ, **env),
                       capture_output=True, text=True, timeout=120)
    return r


def test_config_file_environment_and_configure(tmp_path):
    # The TOML config, WICK_DEVICE and wick.configure behave as in C++: each in a fresh process.
    config = tmp_path / "wick.toml"
    config.write_text('[devices]\npriority = ["opencl", "cpu"]\n')
    r = _run("import wick; print(wick.default_device().plugin)", WICK_CONFIG=str(config))
    assert r.returncode == 0 and r.stdout.strip() in ("opencl", "cpu-onednn"), r.stderr
    r = _run("import wick; print(wick.default_device().plugin)", WICK_DEVICE="cpu")
    assert r.stdout.strip() == "cpu-onednn", r.stderr
    r = _run("""
        import wick
        wick.configure(device=["cpu"], strict=True)
        print(wick.default_device().plugin, wick.strict())
    """, WICK_DEVICE="opencl")
    assert r.stdout.split() == ["cpu-onednn", "True"], r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[devices]\npriorty = ["cpu"]\n')
    r = _run("import wick\ntry:\n    wick.devices()\nexcept ValueError as e:\n    print('ValueError', e)",
             WICK_CONFIG=str(bad))
    assert "ValueError" in r.stdout and "bad.toml:2" in r.stdout and "priority" in r.stdout, r.stdout + r.stderr
