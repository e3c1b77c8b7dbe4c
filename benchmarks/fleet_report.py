"""`fleet report` on 1,000 doctor reports against a bare `json.load` of the same files, medians
of N runs (run by hand, not in CI).

    python benchmarks/fleet_report.py [--runs 7] [--n 1000]

The reports come from real doctor runs against fixture roots, varied programmatically
(tests/helpers/fleet_reports.py). Two comparisons: in process (read + aggregate + render JSON vs
read + json.load), and whole commands (`neuron-env fleet report DIR --format json` vs a python
process that json.loads every file)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BARE = ("import json,sys,pathlib\n"
        "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.json')):\n"
        "    try:\n        json.load(open(p))\n    except ValueError:\n        pass\n")


def median_of(fn, runs: int) -> float:
    samples = []
    for _ in range(runs + 1):  # the first run warms the page cache and is dropped
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples[1:])


def bare(d: Path) -> None:
    for p in sorted(d.rglob("*.json")):
        with open(p) as f, contextlib.suppress(ValueError):
            json.load(f)


def fleet(d: Path) -> None:
    from neuron_env.commands.fleet import fleet_report
    from neuron_env.report.render import render

    render(fleet_report([str(d)]), "json")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--n", type=int, default=1000)
    a = ap.parse_args()
    from tests.helpers import fleet_reports

    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        real = fleet_reports.real_reports(base / "roots", env=env)
        d = base / "reports"
        fleet_reports.write_fleet(d, real, a.n)
        size = sum(p.stat().st_size for p in d.iterdir())
        print(f"{a.n} reports, {size / 1e6:.1f} MB, medians of {a.runs} runs")
        t_bare, t_fleet = median_of(lambda: bare(d), a.runs), median_of(lambda: fleet(d), a.runs)
        print(f"in process: json.load {t_bare * 1000:.0f} ms, fleet report (read + aggregate "
              f"+ render JSON) {t_fleet * 1000:.0f} ms, ratio {t_fleet / t_bare:.2f}x")
        cli = [sys.executable, "-m", "neuron_env", "fleet", "report", str(d), "--format", "json"]
        c_bare = median_of(lambda: subprocess.run([sys.executable, "-c", BARE, str(d)],
                                                  env=env, check=True), a.runs)
        c_fleet = median_of(lambda: subprocess.run(cli, env=env, stdout=subprocess.DEVNULL),
                            a.runs)
        print(f"commands:   python json.load {c_bare * 1000:.0f} ms, neuron-env fleet report "
              f"{c_fleet * 1000:.0f} ms, ratio {c_fleet / c_bare:.2f}x")


if __name__ == "__main__":
    main()
