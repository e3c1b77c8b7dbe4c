"""`install --backend emulated` offline, where pip's own configuration names a wheelhouse with
torch: the failure says the exact flags that use it, and the log of the removed venv is kept
(outside it) and named."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.helpers.cli import cli_env, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a venv is created, then removed


def test_offline_emulated_install_names_pip_s_wheelhouse_and_keeps_its_log(tmp_path):
    house = tmp_path / "wheels"
    house.mkdir()
    (house / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nfind-links = {house}\n")
    venv = tmp_path / "rehearsal"
    env = cli_env(PIP_CONFIG_FILE=str(conf), NEURON_ENV_PYTORCH_INDEX_URL="http://127.0.0.1:9/",
                  NEURON_ENV_NEURON_INDEX_URL="http://127.0.0.1:9/", UV_NO_CONFIG="1",
                  **{k: None for k in os.environ
                     if k.startswith("PIP_") and k != "PIP_CONFIG_FILE"})
    p = run_cli("install", "--backend", "emulated", "--venv", str(venv), env=env, timeout=300)
    assert p.returncode != 0 and not venv.exists(), p.stderr
    assert f"rerun with --torch 2.13 --find-links {house}" in p.stderr
    error = p.stderr[p.stderr.index("neuron-env: "):]  # the message, after the progress lines
    logs = re.findall(r"(/[^\s;)]+\.log)", error)
    assert logs and all(Path(x).is_file() for x in logs), p.stderr
    assert not any(x.startswith(str(venv)) for x in logs)
