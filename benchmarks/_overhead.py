"""Shared by smoke_overhead.py and trial_overhead.py: a neuron-env command against a bare
`python -c` doing the same work in the same target, medians of RUNS runs after one warm-up."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def once(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one run: CPU is user+sys of the command and every process it
    waited for (neuron-env's target subprocess included), which neighbours hardly inflate."""
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   timeout=600, check=True)
    return time.perf_counter() - t0, _children_cpu() - c0


def timed(argv: list[str], runs: int, env: dict) -> float:
    s = [once(argv, env)[0] for _ in range(runs + 1)]
    return statistics.median(s[1:])  # the first run warms the page cache


def interleaved(a: list[str], b: list[str], runs: int, env: dict) -> dict[str, list]:
    """{"a"/"b": [(wall, cpu) per run]}, a and b in turn; a warm-up run of each dropped."""
    out: dict[str, list] = {"a": [], "b": []}
    for i in range(runs + 1):
        for key, argv in (("a", a), ("b", b)):
            t = once(argv, env)
            if i:
                out[key].append(t)
    return out


def compare(bare_code: str, command: list[str], what: str,
            argv: list[str] | None = None) -> None:
    """bare_code: a format string taking {device}; command: neuron-env's arguments after
    `neuron-env`, without --python/--device (added here)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--device", default="neuron")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--best", action="store_true",
                    help="interleave the two and report the best (minimum) of RUNS runs on the "
                    "wall and the CPU clock (issue 39's figure: best of 3)")
    a = ap.parse_args(argv)
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    bare_argv = [a.python, "-c", bare_code.format(device=a.device)]
    ours_argv = [sys.executable, "-m", "neuron_env", *command, "--python", a.python,
                 "--device", a.device]
    name = "neuron-env " + " ".join(x for x in command[:2] if not x.startswith("-"))
    if a.best:
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        s = interleaved(bare_argv, ours_argv, a.runs, env)
        print(f"load average after:  {os.getloadavg()[0]:.2f}")
        for i, clock in enumerate(("wall", "cpu")):
            bare, ours = min(t[i] for t in s["a"]), min(t[i] for t in s["b"])
            print(f"[{clock}] bare python -c {what:<14} {bare:.3f} s   {name} {ours:.3f} s   "
                  f"{command[0]} / bare = {ours / bare:.3f} (best of {a.runs}; goal <= 1.1)")
        return
    bare = timed(bare_argv, a.runs, env)
    ours = timed(ours_argv, a.runs, env)
    print(f"bare python -c {what:<14} {bare:.3f} s")
    print(f"{name:<29} {ours:.3f} s")
    print(f"{command[0]} / bare = {ours / bare:.3f} (target <= 1.15)")
