"""1,000 doctor reports for fleet tests and the benchmark: a few REAL doctor runs against
generated fixture roots (a passing trn2, an end-of-support OS, an older driver), then varied
programmatically (instance ids, torch versions, a few unreachable-style garbage files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import roots

VARIANTS = {"pass": {}, "os": {"os": "debian-12"}, "driver": {"driver": "2.29.0.0"}}
ONLY = "os,instance,driver"


def real_reports(base: Path, env: dict | None = None,
                 only: str | None = ONLY) -> dict[str, dict]:
    """One real doctor report per variant (`only`: the checks run; None: every check)."""
    out = {}
    for name, kw in VARIANTS.items():
        root = roots.trn2_host(base / name, **kw)
        p = subprocess.run([sys.executable, "-m", "neuron_env", "doctor", "--root", str(root),
                            *(["--only", only] if only else []), "--format", "json"],
                           capture_output=True, text=True, timeout=120, env=env)
        out[name] = json.loads(p.stdout)
    return out


def plan(i: int) -> str:
    """Which variant instance i gets: mostly passing, every 50th on an old OS, every 125th on
    an older driver, every 200th a torch drift, instance 999 garbage."""
    if i == 999:
        return "garbage"
    if i % 50 == 7:
        return "os"
    if i % 125 == 3:
        return "driver"
    return "torch" if i % 200 == 11 else "pass"


def write_fleet(out: Path, real: dict[str, dict], n: int = 1000) -> dict[str, int]:
    """Write n reports under `out`; returns how many of each plan were written."""
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for i in range(n):
        kind = plan(i)
        counts[kind] = counts.get(kind, 0) + 1
        iid = f"i-{i:017x}"
        if kind == "garbage":
            (out / f"{iid}.json").write_text('{"schema": "neuron-env.doctor/1", "resu')
            continue
        doc = json.loads(json.dumps(real["pass" if kind == "torch" else kind]))
        doc["target"]["instance"]["instance_id"] = iid
        doc["target"]["packages"]["torch"] = "2.14.0" if kind == "torch" else "2.13.0"
        (out / f"{iid}.json").write_text(json.dumps(doc, indent=2))
    return counts
