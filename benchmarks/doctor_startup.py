"""Start-up and doctor timing, interleaved, medians with spread (run by hand, not in CI).

    python benchmarks/doctor_startup.py [--python TARGET] [--runs 9] [--no-collect-env]

Each round runs every command once, in turn (interleaved), so a busy neighbour slows all of
them alike; the first round warms the page cache and is dropped. Ratios are of medians.
Three clocks: wall (what a user waits for), CPU (user+sys of the command's process and every
child it waited for, e.g. doctor's target probe: rusage deltas) and own CPU (user+sys of the
command's process alone, written at exit by a small wrapper that runs the command with runpy).
On a loaded machine wall clock follows the neighbours; the CPU columns hardly do.
TARGET is a venv with torch (for collect_env); without it one is made with torch==2.13.0
(this machine's pip configuration finds the CPU wheel on disk). IMDS is disabled for the runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELLO = ("import typer\napp = typer.Typer()\n@app.command()\ndef hello():\n    print('hello')\n"
         "app()\n")


COMPILE = ("import compileall, os, neuron_env\n"
           "compileall.compile_dir(os.path.dirname(neuron_env.__file__), quiet=1)\n")


# runs `-m MODULE args` or `SCRIPT args` as __main__ and writes its own user+sys CPU at exit
OWN_CPU = ("import atexit, resource, runpy, sys\n"
           "out = sys.argv.pop(1)\n"
           "def own():\n"
           "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
           "    with open(out, 'w') as f:\n"
           "        f.write(repr(r.ru_utime + r.ru_stime))\n"
           "atexit.register(own)\n"
           "if sys.argv[1] == '-m':\n"
           "    del sys.argv[1]\n"
           "    runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n"
           "else:\n"
           "    del sys.argv[0]\n"
           "    runpy.run_path(sys.argv[0], run_name='__main__')\n")
CLOCKS = ("wall", "cpu", "own cpu")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def once(argv: list[str], env: dict, wrap: Path) -> dict[str, float]:
    if argv[0].startswith("PYTHONPATH="):  # a baseline row: another neuron-env checkout
        env, argv = dict(env, PYTHONPATH=argv[0].split("=", 1)[1]), argv[1:]
    """One run: wall clock, CPU with its waited-for children, and its own CPU (via `wrap`)."""
    out = wrap.with_suffix(".out")
    out.unlink(missing_ok=True)
    c0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run([argv[0], str(wrap), str(out), *argv[1:]], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, env=env, timeout=300, check=False)
    wall, cpu = time.perf_counter() - t0, children_cpu() - c0
    if p.returncode not in (0, 1):  # 1: doctor found problems; anything else: not measured
        raise SystemExit(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr.decode()[-2000:]}")
    own = float(out.read_text()) if out.exists() else float("nan")
    return {"wall": wall, "cpu": cpu, "own cpu": own}


def interleaved(rows: list[tuple[str, list[str]]], runs: int, env: dict) -> dict:
    """{clock: {name: [seconds per round]}}"""
    wrap = Path(tempfile.mkdtemp(prefix="ne-bench-")) / "own_cpu.py"
    wrap.write_text(OWN_CPU)
    samples = {c: {name: [] for name, _ in rows} for c in CLOCKS}
    for i in range(runs + 1):
        for name, argv in rows:
            t = once(argv, env, wrap)
            if i:  # round 0 warms the page cache
                for c in CLOCKS:
                    samples[c][name].append(t[c])
    return samples


def target_python(given: str | None) -> str:
    if given:
        return given
    d = Path(tempfile.mkdtemp(prefix="ne-bench-"))
    subprocess.run([sys.executable, "-m", "venv", str(d / "v")], check=True, timeout=300)
    target = str(d / "v/bin/python")
    subprocess.run([target, "-m", "pip", "install", "-q", "torch==2.13.0"], check=True,
                   timeout=1800)
    return target


def ratio(samples: dict, a: str, b: str) -> str:
    ma, mb = statistics.median(samples[a]), statistics.median(samples[b])
    # spread of the ratio: the per-round ratios' min..max
    per = [x / y for x, y in zip(samples[a], samples[b], strict=True)]
    return f"{ma / mb:.2f} (per-round {min(per):.2f}..{max(per):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", help="target interpreter with torch installed")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--no-collect-env", action="store_true", help="skip torch's collect_env")
    ap.add_argument("--neuron-env-python", default=sys.executable,
                    help="the interpreter neuron-env is installed in; default this one")
    ap.add_argument("--baseline", metavar="DIR",
                    help="another neuron-env checkout (e.g. `git archive main` unpacked): its "
                    "doctor runs interleaved with this one, on PYTHONPATH=DIR (before/after)")
    a = ap.parse_args()
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    target = target_python(a.python)
    hello = Path(tempfile.mkdtemp()) / "hello.py"
    hello.write_text(HELLO)
    # an installed wheel has its bytecode compiled; a checkout under PYTHONDONTWRITEBYTECODE=1
    # would recompile every module on every run, which no user pays
    subprocess.run([a.neuron_env_python, "-c", COMPILE], check=True, timeout=300, env=env)
    if a.baseline:
        subprocess.run([a.neuron_env_python, "-c", COMPILE], check=True, timeout=300,
                       env=dict(env, PYTHONPATH=a.baseline))
    ne = [a.neuron_env_python, "-m", "neuron_env"]
    rows = [
        ("typer hello (bare)", [a.neuron_env_python, str(hello)]),
        ("neuron-env --version", [*ne, "--version"]),
        ("neuron-env matrix show", [*ne, "matrix", "show"]),
        ("neuron-env doctor --format json", [*ne, "doctor", "--format", "json", "--python",
                                             target]),
    ]
    if a.baseline:  # both doctors on a PYTHONPATH, so that both pay its extra look-ups
        here = str(Path(__file__).resolve().parent.parent)
        rows[-1] = (rows[-1][0], [f"PYTHONPATH={here}", *rows[-1][1]])
        rows.append(("baseline doctor --format json",
                     [f"PYTHONPATH={a.baseline}", *rows[-1][1][1:]]))
    if not a.no_collect_env:
        rows.append(("python -m torch.utils.collect_env",
                     [target, "-m", "torch.utils.collect_env"]))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    samples = interleaved(rows, a.runs, env)
    print(f"load average after:  {os.getloadavg()[0]:.2f}")
    for clock in CLOCKS:
        report(clock, samples[clock], rows, a.runs, not a.no_collect_env)
        if a.baseline:
            print(f"[{clock}] baseline doctor / hello = "
                  f"{ratio(samples[clock], 'baseline doctor --format json', 'typer hello (bare)')}")


def report(clock: str, s: dict, rows: list, runs: int, collect_env: bool) -> None:
    print(f"\n[{clock}] {'command':<36}{'median s':>10}{'min s':>8}{'max s':>8}   ({runs} "
          "rounds, interleaved)")
    for name, _ in rows:
        v = s[name]
        print(f"{'':<{len(clock) + 3}}{name:<36}{statistics.median(v):>10.3f}{min(v):>8.3f}"
              f"{max(v):>8.3f}")
    doc, hel = "neuron-env doctor --format json", "typer hello (bare)"
    print(f"[{clock}] doctor / typer hello    = {ratio(s, doc, hel)}   (goal <= 1.2, #39)")
    print(f"[{clock}] --version / typer hello = {ratio(s, 'neuron-env --version', hel)}")
    print(f"[{clock}] matrix show / hello     = {ratio(s, 'neuron-env matrix show', hel)}")
    if collect_env:
        print(f"[{clock}] doctor / collect_env    = "
              f"{ratio(s, doc, 'python -m torch.utils.collect_env')}   (target <= 0.1)")


if __name__ == "__main__":
    main()
