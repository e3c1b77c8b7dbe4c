"""`fleet report` at fleet size (#49): N doctor reports, every output format, against a bare
loop that json.loads each file and counts statuses; wall time and peak memory (RSS) of each
command, side by side in one run (run by hand, not in CI).

    python benchmarks/fleet_scale.py [--n 10000] [--runs 3] [--formats text,json,junit,html]
                                     [--repo DIR] [--s3 10000]

The reports: a REAL full doctor run against three fixture roots (tests/helpers/fleet_reports.py:
~14 KB, 21 checks each), varied per instance. `--repo DIR`: measure the neuron-env of another
checkout too (e.g. `git archive <commit> | tar -x -C DIR`: the "before" column), in the same
run. `--s3 N`: also N objects in a moto server on loopback, `fleet report s3://...` read one at
a time against the default pool (in process; needs moto[server], the [test] extra)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BARE = ("import json,sys,pathlib,collections\n"
        "c=collections.Counter()\n"
        "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.json')):\n"
        "    try:\n        d=json.loads(p.read_bytes())\n    except ValueError:\n"
        "        continue\n"
        "    for r in d.get('results') or []:\n        c[r.get('status')]+=1\n"
        "print(dict(c))\n")


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one command (its own rusage, via wait4)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode() if p.stderr else ""
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:6])}: exit {p.returncode}\n{err[-2000:]}")
    return wall, ru.ru_maxrss / 1024


def generate(base: Path, n: int, env: dict[str, str]) -> Path:
    from tests.helpers import fleet_reports

    real = fleet_reports.real_reports(base / "roots", env=env, only=None)
    d = base / "reports"
    fleet_reports.write_fleet(d, real, n)
    return d


def files(args: argparse.Namespace, d: Path, env: dict[str, str]) -> None:
    repos = [("after", REPO)] + ([("before", Path(args.repo))] if args.repo else [])
    cmds = {"bare loop": [sys.executable, "-c", BARE, str(d)]}
    for label, repo in repos:
        for fmt in args.formats.split(","):
            cmds[f"{label}: --format {fmt}"] = [
                sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                "from neuron_env.cli.app import main; sys.argv[0] = 'neuron-env'; main()",
                str(repo), "fleet", "report", str(d), "--format", fmt]
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(args.runs):  # interleaved: the machine's load falls on every command alike
        for k, cmd in cmds.items():
            got[k].append(timed(cmd, env))
    bare = statistics.median(w for w, _ in got["bare loop"])
    print(f"{'command':<28} {'wall s':>8} {'x bare':>7} {'peak MB':>8}")
    for k, samples in got.items():
        wall = statistics.median(w for w, _ in samples)
        print(f"{k:<28} {wall:>8.2f} {wall / bare:>7.2f} {max(m for _, m in samples):>8.0f}")


def s3(n: int, d: Path, runs: int) -> None:
    import logging

    from moto.s3.models import s3_backends
    from moto.server import ThreadedMotoServer

    from neuron_env.fleet import sources
    from tests.integration.conftest import ACCOUNT, free_port

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per GET otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="testing",
                      AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    try:
        backend = s3_backends[ACCOUNT]["global"]
        backend.create_bucket("fleet", "us-east-1")
        reports = sorted(d.glob("*.json"))
        for i in range(n):  # straight into moto's store: 10,000 PUTs would take minutes
            backend.put_object("fleet", f"r/{i:06d}.json", reports[i % len(reports)].read_bytes())
        print(f"\ns3://fleet/r/: {n} objects in moto's server on loopback (in process)")
        for workers in (1, sources.WORKERS):
            walls = []
            for _ in range(runs):
                t0 = time.perf_counter()
                got = sum(1 for _ in sources.from_s3("s3://fleet/r/", "us-east-1",
                                                      time.monotonic() + 3600, workers))
                walls.append(time.perf_counter() - t0)
            print(f"  {workers:>2} at a time: {statistics.median(walls):.2f} s ({got} read)")
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", default="text,json,junit,html")
    ap.add_argument("--repo", help="another checkout to measure alongside (before)")
    ap.add_argument("--s3", type=int, default=0, help="objects for the s3:// part (0: skip)")
    ap.add_argument("--dir", help="reuse (or keep) the generated reports here")
    a = ap.parse_args()
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(a.dir or tmp)
        d = base / "reports"
        if not (d.is_dir() and len(list(d.glob("*.json"))) == a.n):
            d = generate(base, a.n, env)
        size = sum(p.stat().st_size for p in d.iterdir())
        print(f"{a.n} reports, {size / 1e6:.0f} MB; medians of {a.runs} interleaved runs, "
              f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
        files(a, d, env)
        if a.s3:
            s3(a.s3, d, a.runs)


if __name__ == "__main__":
    main()
