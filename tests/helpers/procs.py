"""Find a test's own processes: by a token in their environment, not by a command line that
another xdist worker's run of the same script also has."""

from __future__ import annotations

import time
from pathlib import Path

VAR = "NEURON_ENV_TEST_TOKEN"


def token(what: str) -> str:
    return f"{what}-{time.monotonic_ns()}"


def with_token(tok: str) -> list[int]:
    """Live processes whose environment carries `tok` (zombies have none left to read)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if f"{VAR}={tok}".encode() in (d / "environ").read_bytes():
                    found.append(int(d.name))
            except OSError:
                continue
    return found
