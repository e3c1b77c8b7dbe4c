"""Running the CLI as a subprocess from a test: the repository root, the environment (IMDS off,
no NEURON_ENV_* of the developer's shell) and the call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def cli_env(**extra: str) -> dict[str, str]:
    """Environment for running the CLI as a subprocess: IMDS off unless a test sets it."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith(("NEURON_ENV_", "AWS_EC2_METADATA")) and k != "VIRTUAL_ENV")
           or k in ("NEURON_ENV_CACHE_DIR", "NEURON_ENV_MATRIX_DIR")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def run_cli(*args: str, env: dict | None = None, timeout: float = 60,
            input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuron_env", *args], capture_output=True,
                          text=True, env=env or cli_env(), timeout=timeout, cwd=REPO,
                          input=input)
