"""torch.distributed backend "neuron" on the emulator: 2 ranks through torchrun, on the CPU."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(python: str, script: str, *args: str) -> subprocess.CompletedProcess:
    """torchrun in its own process group, killed whole if it overruns (workers included)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.pop("NEURON_EMULATOR_DEVICES", None)
    cmd = [python, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr",
           "127.0.0.1", "--master-port", str(free_port()), str(HERE / "dist" / script), *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=170)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


@pytest.mark.parametrize("what", ["collectives", "ddp", "fsdp2"])
def test_two_ranks(torch_python, what):
    p = torchrun(torch_python, "ddp_fsdp.py", what)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert f"RANK0 OK {what}" in p.stdout and f"RANK1 OK {what}" in p.stdout, out[-4000:]


def test_aws_guide_collective_unchanged(torch_python):
    p = torchrun(torch_python, "aws_collective.py")
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    assert "rank=0 local_rank=0 world_size=2: all_reduce=3.0" in p.stdout
    assert "rank=1 local_rank=1 world_size=2: all_reduce=3.0" in p.stdout
