"""scan's speed on a large tree (torch's own Python files) against a bare `ast.parse` of the
same files in the same number of processes, and against torchfix (PyTorch's linter) on the same
tree; medians of N runs (run by hand, not in CI).

    python benchmarks/scan_speed.py [--tree DIR] [--runs 3] [--jobs 1] [--torchfix PATH]

DIR defaults to the torch test venv's package (tests' `torch_python` fixture creates it).
--torchfix: a torchfix executable; without it, `torchfix` on PATH or in
~/.cache/neuron-env-bench/torchfix-venv (made on demand with `pip install torchfix`: libcst and
flake8 are too heavy for the test extra; --no-torchfix to skip). torchfix runs once (slow).
Goal: scan at least half as fast as the bare parse, and faster than torchfix.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from neuron_env.scan import engine, ruleset, walk  # noqa: E402

DEFAULT_TREE = (Path.home() / ".cache" / "neuron-env-tests" / "torch-2.13.0-py311" / "lib" /
                "python3.11" / "site-packages" / "torch")


def timed(fn, *args) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its children): on a shared machine the
    CPU time is the fairer measure."""
    def cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), \
            resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    w0, c0 = time.perf_counter(), cpu()
    fn(*args)
    return time.perf_counter() - w0, cpu() - c0


def parse_one(path: str) -> int:
    with open(path, "rb") as f:
        data = f.read()
    with contextlib.suppress(SyntaxError, ValueError):
        ast.parse(data)
    return 1


def bare_parse(paths: list[str], jobs: int) -> None:
    if jobs <= 1:
        for p in paths:
            parse_one(p)
    else:
        with ProcessPoolExecutor(jobs) as ex:
            list(ex.map(parse_one, paths, chunksize=max(1, len(paths) // (jobs * 8))))


def full_scan(tree: str, jobs: int) -> int:
    """Everything `neuron-env scan` does but rendering: rules, walk (.gitignore), analysis."""
    rules = ruleset.locate(None)
    rs = ruleset.load(rules)
    tasks, _ = walk.discover([tree])
    res = engine.run(tasks, str(rules), set(rs.rules), False, jobs)
    return sum(len(r["hits"]) for r in res)


def torchfix_exe(given: str | None, make: bool) -> str | None:
    if given:
        return given
    found = shutil.which("torchfix")
    venv = Path.home() / ".cache" / "neuron-env-bench" / "torchfix-venv"
    if found or (venv / "bin" / "torchfix").exists():
        return found or str(venv / "bin" / "torchfix")
    if not make:
        return None
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "torchfix"], timeout=900)
    return str(venv / "bin" / "torchfix") if r.returncode == 0 else None


def torchfix_run(exe: str, tree: str, jobs: int) -> None:
    subprocess.run([exe, "--jobs", str(jobs), tree], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=3600, check=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=str(DEFAULT_TREE))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--torchfix")
    ap.add_argument("--no-torchfix", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(a.tree):
        sys.exit(f"{a.tree}: not a directory (run the tests once to create the torch venv, "
                 "or give --tree)")
    tasks, _ = walk.discover([a.tree])
    paths = [t.path for t in tasks if t.kind == "python"]
    lines = sum(Path(p).read_bytes().count(b"\n") for p in paths)
    print(f"tree: {a.tree}\nfiles: {len(paths)} Python ({len(tasks)} in all), lines: {lines}, "
          f"processes: {a.jobs}, runs: {a.runs} (medians)")
    samples: dict[str, list[tuple[float, float]]] = {"bare ast.parse": [],
                                                     "neuron-env scan": []}
    for i in range(a.runs):  # interleaved, so that a change of load hits both alike
        samples["bare ast.parse"].append(timed(bare_parse, paths, a.jobs))
        samples["neuron-env scan"].append(timed(full_scan, a.tree, a.jobs))
        print(f"run {i + 1}: " + ", ".join(f"{k} {v[-1][0]:.1f} s wall / {v[-1][1]:.1f} s CPU"
                                           for k, v in samples.items()), flush=True)
    exe = None if a.no_torchfix else torchfix_exe(a.torchfix, True)
    if exe:
        samples["torchfix (1 run)"] = [timed(torchfix_run, exe, a.tree, a.jobs)]
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in samples.items()}
    print(f"{'':<20} {'wall s':>8} {'CPU s':>8} {'files/s':>9} {'lines/s':>10}  (per CPU second)")
    for name, (w, c) in med.items():
        print(f"{name:<20} {w:8.2f} {c:8.2f} {len(paths) / c:9.0f} {lines / c:10.0f}")
    p, s_ = med["bare ast.parse"][1], med["neuron-env scan"][1]
    print(f"findings: {full_scan(a.tree, 1)}; scan speed / bare parse speed (CPU): {p / s_:.2f} "
          "(goal >= 0.5)")
    if exe:
        print(f"scan speed / torchfix speed (CPU): {med['torchfix (1 run)'][1] / s_:.1f}x "
              "(goal > 1)")


if __name__ == "__main__":
    main()
