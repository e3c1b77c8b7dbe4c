"""Issue #36, a suspected hole that held when tried, kept as a regression: SIGKILL of the
neuron-env process of `trial --world-size 2 --nnodes 2` (no cleanup code of ours runs) still
ends both torchrun agents and the workers they started (each in a session of its own)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers import procs
from tests.helpers.cli import REPO, cli_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(300)
def test_workers_do_not_survive_a_sigkilled_neuron_env(torch_python, tmp_path):
    tok = procs.token("held-workers")
    env = cli_env(TMPDIR=str(tmp_path), **{procs.VAR: tok})
    parent = subprocess.Popen([sys.executable, "-m", "neuron_env", "trial", "builtin:mlp",
                               "--world-size", "2", "--nnodes", "2", "--device", "cpu",
                               "--steps", "200", "--iterations", "200", "--python",
                               torch_python, "--timeout", "240"], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 200
    while time.monotonic() < end and parent.poll() is None and not list(
            tmp_path.glob("neuron-env-trial-dist-*/rank1.steps")):
        time.sleep(0.2)
    assert parent.poll() is None, "the trial ended before its ranks started"
    assert list(tmp_path.glob("neuron-env-trial-dist-*/rank1.steps")), "no rank started"
    assert len(procs.with_token(tok)) >= 4  # neuron-env, 2 agents, their workers
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=10)
    end = time.monotonic() + 60
    while procs.with_token(tok) and time.monotonic() < end:
        time.sleep(0.2)
    assert procs.with_token(tok) == [], "processes outlived the neuron-env that started them"
