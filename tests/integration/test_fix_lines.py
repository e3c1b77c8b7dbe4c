"""Every fix line doctor prints pastes into bash: `bash -n` for all of them, and each one runs
here against stub commands (sudo, apt-get, curl, gpg, ...) that record what they were asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.util.record import replace
from tests.helpers.facts import GOOD, host, target

pytestmark = pytest.mark.integration
M = catalog.select("2.33")
CTX = checks.Context(python_flag="/venv/bin/python")
STUBS = ("sudo", "apt-get", "curl", "gpg", "tee", "install", "modprobe", "dpkg-reconfigure",
         "add-apt-repository", "aws", "neuron-env", "uv", "python")

SCENARIOS = {
    "no driver": host(module=None, apt={}),
    "driver not loaded": host(module=None),
    "old dkms": host(apt={"aws-neuron-dkms": "2.1"}),
    "image without driver": host(root_explicit=True, apt={}, module=None),
    "python 3.11, 3.12 found": replace(
        host(tgt=target(version="3.11.7")), pythons=(("/usr/bin/python3.12", "3.12"),)),
    "python 3.11, uv": replace(host(tgt=target(version="3.11.7")),
                                           uv="/usr/local/bin/uv"),
    "python 3.11, nothing": host(tgt=target(version="3.11.7")),
    "no torch": host(tgt=target({})),
    "cuda torch": host(tgt=target(dict(GOOD, torch="2.14.0+cu126"))),
    "placeholder": host(tgt=target(dict(GOOD, **{"torch-neuronx": "0.0.1"}))),
    "emulator": host(tgt=target(dict(GOOD, **{"neuron-emulator": "0.1"}))),
    "pypi torchvision": host(tgt=target(dict(GOOD, torchvision="0.29.0", torchaudio="2.9.0"))),
    "ubuntu 22.04": host(os_version="22.04", tgt=target({})),
    "ubuntu 20.04": host(os_version="20.04", tgt=target({})),
}


def _fix_lines() -> list[tuple[str, str, str]]:
    out = []
    for name, facts in SCENARIOS.items():
        for r in checks.run_checks(facts, M, CTX, checks.all_ids()):
            if r.status != "pass" and r.fix_command:
                out.append((name, r.id, r.fix_command))
    return out


LINES = _fix_lines()


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("stubs")
    for n in STUBS:
        body = 'exec "$@"' if n == "sudo" else (
            f'echo "{n} $*" >> "$STUB_LOG"; ' + ('cat >> "$STUB_LOG"' if n == "tee" else
                                                 'echo /usr/bin/python3.12' if n == "uv"
                                                 else "true"))
        (d / n).write_text(f"#!/bin/sh\n{body}\n")
        (d / n).chmod(0o755)
    return d


def test_every_failing_scenario_prints_a_command_somewhere():
    ids = {i for _, i, _ in LINES}
    assert {"driver.module", "python.version", "backend.torch", "os.release",
            "backend.emulator", "backend.companions"} <= ids


@pytest.mark.parametrize("scenario, id_, line", LINES, ids=[f"{s}-{i}" for s, i, _ in LINES])
def test_fix_line_pastes_and_runs(scenario, id_, line, stubs, tmp_path):
    assert "(" not in line.replace("$(", ""), f"prose in a command: {line}"
    syntax = subprocess.run(["bash", "-n", "-c", line], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    log = tmp_path / "log"
    env = dict(os.environ, PATH=f"{stubs}:/usr/bin:/bin", STUB_LOG=str(log), HOME=str(tmp_path))
    runnable = line.replace("/venv/bin/python", f"{stubs}/python")  # the target's python
    done = subprocess.run(["bash", "-c", runnable], capture_output=True, text=True, env=env,
                          timeout=30)
    assert done.returncode == 0, (line, done.stderr)
    calls = log.read_text()
    if "apt-get install" in line and "keyrings" in line:  # the whole repository sequence
        assert "deb [signed-by=/etc/apt/keyrings/neuron.gpg] https://apt.repos.neuron." in calls
        assert calls.index("apt-get update") < calls.index("apt-get install -y")
        codename = SCENARIOS[scenario].os.codename
        assert f" {codename} main" in calls


def test_image_fix_says_where_to_run_it():
    r = {x.id: x for x in checks.run_checks(SCENARIOS["image without driver"], M, CTX,
                                            ["driver.module"])}["driver.module"]
    assert "chroot /mnt/img" in r.fix and "chroot" not in r.fix_command
