"""Shared by smoke_overhead.py and trial_overhead.py: a neuron-env command against a bare
`python -c` doing the same work in the same target, medians of RUNS runs after one warm-up."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def timed(argv: list[str], runs: int, env: dict) -> float:
    s = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       timeout=600, check=True)
        s.append(time.perf_counter() - t0)
    return statistics.median(s[1:])  # the first run warms the page cache


def compare(bare_code: str, command: list[str], what: str) -> None:
    """bare_code: a format string taking {device}; command: neuron-env's arguments after
    `neuron-env`, without --python/--device (added here)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--device", default="neuron")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    bare = timed([a.python, "-c", bare_code.format(device=a.device)], a.runs, env)
    ours = timed([sys.executable, "-m", "neuron_env", *command, "--python", a.python,
                  "--device", a.device], a.runs, env)
    name = "neuron-env " + " ".join(x for x in command[:2] if not x.startswith("-"))
    print(f"bare python -c {what:<14} {bare:.3f} s")
    print(f"{name:<29} {ours:.3f} s")
    print(f"{command[0]} / bare = {ours / bare:.3f} (target <= 1.15)")
