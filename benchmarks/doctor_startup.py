"""Start-up and doctor timing, side by side, medians of N runs (run by hand, not in CI).

    python benchmarks/doctor_startup.py [--python TARGET] [--runs 7]

TARGET is a venv with torch (for collect_env); without it, one is made with torch==2.13.0
(this machine's pip configuration finds the CPU wheel on disk). IMDS is disabled for the runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELLO = ("import typer\napp = typer.Typer()\n@app.command()\ndef hello():\n    print('hello')\n"
         "app()\n")


def timed(argv: list[str], runs: int, env: dict) -> tuple[float, float]:
    samples = []
    for _ in range(runs + 1):  # the first run warms the page cache and is dropped
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       timeout=300, check=False)
        samples.append(time.perf_counter() - t0)
    s = samples[1:]
    return statistics.median(s), (max(s) - min(s))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", help="target interpreter with torch installed")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--neuron-env-python", default=sys.executable,
                    help="the interpreter neuron-env is installed in (its own venv, as pipx "
                         "would make it); default this one")
    a = ap.parse_args()
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    target = a.python
    if not target:
        d = Path(tempfile.mkdtemp(prefix="ne-bench-"))
        subprocess.run([sys.executable, "-m", "venv", str(d / "v")], check=True, timeout=300)
        target = str(d / "v/bin/python")
        subprocess.run([target, "-m", "pip", "install", "-q", "torch==2.13.0"], check=True,
                       timeout=1800)
    hello = Path(tempfile.mkdtemp()) / "hello.py"
    hello.write_text(HELLO)
    ne_py = a.neuron_env_python
    ne = [ne_py, "-m", "neuron_env"]
    rows = [
        ("typer hello (bare)", [ne_py, str(hello)]),
        ("neuron-env --version", [*ne, "--version"]),
        ("neuron-env matrix show", [*ne, "matrix", "show"]),
        ("neuron-env doctor --format json", [*ne, "doctor", "--format", "json", "--python",
                                             target]),
        ("python -m torch.utils.collect_env", [target, "-m", "torch.utils.collect_env"]),
    ]
    results = {}
    print(f"{'command':<36}{'median s':>10}{'spread s':>10}   ({a.runs} runs)")
    for name, argv in rows:
        med, spread = timed(argv, a.runs, env)
        results[name] = med
        print(f"{name:<36}{med:>10.3f}{spread:>10.3f}")
    d = results["neuron-env doctor --format json"]
    print(f"\ndoctor / collect_env = {d / results['python -m torch.utils.collect_env']:.3f} "
          f"(target <= 0.1)")
    print(f"doctor / typer hello = {d / results['typer hello (bare)']:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
