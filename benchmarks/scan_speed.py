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


def parse_one(path: str) -> int:
    with open(path, "rb") as f:
        data = f.read()
    with contextlib.suppress(SyntaxError, ValueError):
        ast.parse(data)
    return 1


def bare_parse(paths: list[str], jobs: int) -> float:
    t0 = time.perf_counter()
    if jobs <= 1:
        for p in paths:
            parse_one(p)
    else:
        with ProcessPoolExecutor(jobs) as ex:
            list(ex.map(parse_one, paths, chunksize=max(1, len(paths) // (jobs * 8))))
    return time.perf_counter() - t0


def full_scan(tree: str, jobs: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    rules = ruleset.locate(None)
    rs = ruleset.load(rules)
    tasks, _ = walk.discover([tree])
    res = engine.run(tasks, str(rules), set(rs.rules), False, jobs)
    return time.perf_counter() - t0, sum(len(r["hits"]) for r in res)


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


def torchfix_run(exe: str, tree: str, jobs: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([exe, "--jobs", str(jobs), tree], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=3600, check=False)
    return time.perf_counter() - t0


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
    parse = statistics.median(bare_parse(paths, a.jobs) for _ in range(a.runs))
    scans = [full_scan(a.tree, a.jobs) for _ in range(a.runs)]
    scan_t = statistics.median(t for t, _ in scans)
    rows = [("bare ast.parse", parse), (f"neuron-env scan ({scans[0][1]} findings)", scan_t)]
    exe = None if a.no_torchfix else torchfix_exe(a.torchfix, True)
    if exe:
        rows.append(("torchfix (1 run)", torchfix_run(exe, a.tree, a.jobs)))
    for name, t in rows:
        print(f"{name:<34} {t:8.2f} s  {len(paths) / t:8.0f} files/s  {lines / t:10.0f} "
              "lines/s")
    print(f"scan speed / bare parse speed: {parse / scan_t:.2f} (goal >= 0.5)")
    if exe:
        print(f"scan speed / torchfix speed: {rows[2][1] / scan_t:.1f}x (goal > 1)")


if __name__ == "__main__":
    main()
