"""Numbers and names that make no sense are refused while parsing (exit 2, a clear message,
before anything changes); `--format json` still prints one JSON document on a parse error;
hostile matrix paths (FIFO, /dev/zero, deep nesting, contradictions) exit 2."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from tests.helpers.cli import REPO, run_cli

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("args", [
    ["smoke", "--timeout", "inf"], ["smoke", "--timeout", "nan"], ["smoke", "--timeout", "0"],
    ["smoke", "--timeout", "-5"], ["smoke", "--timeout", "1e300"],
    ["doctor", "--smoke-timeout", "inf"], ["doctor", "--smoke-timeout", "nan"],
    ["install", "--lock-timeout", "nan"], ["install", "--lock-timeout", "inf"],
    ["install", "--timeout", "-1"],
    ["smoke", "--rtol", "nan"], ["smoke", "--atol", "inf"], ["smoke", "--rtol", "-1"],
    ["smoke", "--size", "0"], ["smoke", "--iterations", "-3"], ["collectives", "--timeout", "nan"],
])
def test_senseless_numbers_exit_2_with_a_message(args):
    r = run_cli(*args, timeout=30)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert "Invalid value for" in r.stderr and "Traceback" not in r.stderr
    assert "timed out" not in r.stderr


def test_an_unknown_installer_is_refused_before_the_venv_is_made(tmp_path):
    venv = tmp_path / "new-venv"
    r = run_cli("install", "--installer", "conda", "--venv", str(venv), "--yes", timeout=30)
    assert r.returncode == 2 and "'conda' is not one of 'pip', 'uv'" in r.stderr
    assert not venv.exists()


@pytest.mark.parametrize(("args", "schema", "needle"), [
    (["smoke", "--size", "abc", "--format", "json"], "smoke", "--size"),
    (["smoke", "--format=json", "--bogus"], "smoke", "No such option: --bogus"),
    (["doctor", "--format", "json", "--smoke-timeout", "inf"], "doctor", "--smoke-timeout"),
    (["install", "--format", "json", "--installer", "conda"], "install", "conda"),
    (["matrix", "show", "--format", "json", "--nope"], "matrix", "--nope"),
])
def test_parse_errors_in_json_mode_print_the_error_envelope(args, schema, needle):
    r = run_cli(*args, timeout=30)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["exit_code"] == 2 and doc["error"]["code"] == "usage"
    assert needle in doc["error"]["message"]
    jsonschema.validate(doc, json.loads(
        (REPO / f"neuron_env/schemas/{schema}.schema.json").read_text()))


def test_hostile_matrix_paths_exit_2(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    for path, needle in ((fifo, "FIFO"), ("/dev/zero", "device"), (deep, "nested too deeply")):
        for args in (["matrix", "validate", str(path)], ["install", "--matrix", str(path)],
                     ["doctor", "--matrix", str(path), "--only", "python"]):
            r = run_cli(*args, timeout=30)
            assert r.returncode == 2 and needle in r.stdout + r.stderr, (args, r.stderr)
            assert "Traceback" not in r.stderr


def test_matrix_validate_refuses_a_contradiction(tmp_path):
    bad = tmp_path / "neuron-2.33.toml"
    bad.write_text((REPO / "matrices/neuron-2.33.toml").read_text().replace(
        'release = "2.33"', 'release = "2.34"'))
    r = run_cli("matrix", "validate", str(bad), timeout=30)
    assert r.returncode == 2 and "file named for 2.33" in r.stdout + r.stderr


def test_sigterm_before_the_install_step_still_leaves_one_json_document(tmp_path):
    """SIGTERM while neuron-env probes the target (a slow interpreter): exit 130 and the error
    envelope on stdout. Old code: killed silently, nothing on stdout."""
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers.cli import cli_env

    mark = tmp_path / "probing"
    slow = tmp_path / "python3"
    slow.write_text(f"#!/bin/bash\ntouch {mark}\nsleep 60\n")
    slow.chmod(0o755)
    p = subprocess.Popen([sys.executable, "-m", "neuron_env", "install", "--yes", "--python",
                          str(slow), "--format", "json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=REPO)
    deadline = time.monotonic() + 60
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists(), "neuron-env never ran the interpreter"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    doc = json.loads(out)
    assert doc["exit_code"] == 130 and doc["error"]["code"]
    jsonschema.validate(doc, json.loads(
        (REPO / "neuron_env/schemas/install.schema.json").read_text()))
