"""doctor in-process and in a fresh interpreter: what it imports, a crashing check (exit 3).
Both start the target probe (a real process), so they are integration tests."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from neuron_env import checks
from neuron_env.cli import COMMANDS, app
from neuron_env.util.record import replace
from tests.helpers import roots

pytestmark = pytest.mark.integration

# doctor must not import these: torch never, boto3 only with --aws, the install resolution
# machinery (and packaging's requirement/marker/tag parsers) only on install
# (install.plan, pure, is imported when a failing backend check asks the planner for a fix
# it would accept: #14's "never print a fix neuron-env would refuse"); nor, for start-up
# (#21): packaging at all (util/versions.py), frozen dataclasses, hashlib, a second
# click beside typer's own, or the modules of other commands (cli/lazy.py)
# nor the HTML reports or their plotting library (the optional `html` extra: matplotlib)
NEVER = ("torch", "boto3", "botocore", "rich", "matplotlib", "neuron_env.report.html",
         "neuron_env.report.html_page", "neuron_env.report.plots",
         "neuron_env.install.execute", "neuron_env.install.run_state",
         "packaging.requirements", "packaging.markers",
         "packaging.tags", "packaging", "dataclasses", "hashlib",
         *(("click",) if importlib.util.find_spec("typer._click") else ()),
         *sorted({f"neuron_env.cli.{m}" for _, m in COMMANDS} - {"neuron_env.cli.doctor"}))
# once the matrix cache is warm (matrix/cache.py), nor the TOML parser, the semantic checks or
# tempfile (the cache's atomic write)
WARM_NEVER = ("tomllib", "tomli", "neuron_env.matrix.semantics", "tempfile")


def _doctor_imports(root, env, main="neuron_env.cli", never=()) -> tuple[list[str], dict]:
    """(modules of NEVER + WARM_NEVER (+ `never`) that doctor imported, its JSON) in a fresh
    interpreter; `main`: the module whose main() runs (neuron_env.cli: the typer app)."""
    code = (f"import sys\nfrom {main} import main\nsys.argv=['neuron-env','doctor',"
            f"'--root',{str(root)!r},'--format','json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"bad=[m for m in {NEVER + WARM_NEVER + tuple(never)!r} if m in sys.modules]\n"
            "sys.stderr.write('IMPORTED=%s' % ','.join(bad))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env)
    assert "IMPORTED=" in p.stderr, p.stderr
    return [m for m in p.stderr.split("IMPORTED=")[-1].strip().split(",") if m], \
        json.loads(p.stdout)


def test_doctor_never_imports_torch_boto3_resolution_or_what_it_need_not(tmp_path):
    root = roots.trn2_host(tmp_path / "r")
    env = dict(os.environ, NEURON_ENV_CACHE_DIR=str(tmp_path / "cache"))
    cold, doc = _doctor_imports(root, env)  # the first run parses the matrix and keeps it
    assert [m for m in cold if m not in WARM_NEVER] == [], cold
    assert doc["schema"] == "neuron-env.doctor/1" and "tomllib" in cold
    warm, again = _doctor_imports(root, env)
    assert warm == [], warm
    assert [r["id"] for r in again["results"]] == [r["id"] for r in doc["results"]]


def test_the_console_entry_runs_common_doctor_lines_without_typer_and_says_the_same(tmp_path):
    """entry.py (the `neuron-env` script, `python -m neuron_env`): doctor --root R --format json
    imports no typer (nor click) and prints what the typer command prints."""
    root = roots.trn2_host(tmp_path / "r")
    env = dict(os.environ, NEURON_ENV_CACHE_DIR=str(tmp_path / "cache"))
    _doctor_imports(root, env)  # warm the matrix cache
    bad, fast = _doctor_imports(root, env, "neuron_env.entry", ("typer", "click", "typer._click"))
    assert bad == [], bad
    _, slow = _doctor_imports(root, env)
    for doc in (fast, slow):  # timings and the disk's free space apart, every byte the same
        doc.pop("elapsed_s")
        for r in doc["results"]:
            r.pop("duration_s", None)
            for d in (r.get("observed") or {}).values() if r["id"] == "cache.compile" else ():
                if isinstance(d, dict):
                    d.pop("free_gib", None)  # other processes write to this disk meanwhile
    assert fast == slow
    # the same screen, messages and exit codes: a failing host (1), a missing --root (2)
    for args in (["--root", str(root)], ["--root", str(tmp_path / "absent")]):
        runs = [subprocess.run([sys.executable, "-c", f"import sys; sys.argv[1:] = {args!r}; "
                                f"sys.argv.insert(1, 'doctor'); from {m} import main; main()"],
                               capture_output=True, text=True, timeout=60, env=env)
                for m in ("neuron_env.entry", "neuron_env.cli")]
        assert runs[0].returncode == runs[1].returncode in (1, 2), runs
        assert (runs[0].stdout, runs[0].stderr) == (runs[1].stdout, runs[1].stderr)


def test_crashing_check_gives_exit_3_and_a_full_report(tmp_path, monkeypatch):
    def boom(facts, m, ctx):
        raise RuntimeError("probe returned nonsense")

    checks.all_ids()
    monkeypatch.setattr(checks, "REGISTRY", [replace(c, fn=boom) if c.id == "os.arch" else c
                                             for c in checks.registered()])
    root = roots.trn2_host(tmp_path / "r")
    res = CliRunner().invoke(app, ["doctor", "--root", str(root), "--format", "json"])
    assert res.exit_code == 3
    doc = json.loads(res.stdout)
    arch = next(r for r in doc["results"] if r["id"] == "os.arch")
    assert arch["status"] == "error" and "RuntimeError" in arch["summary"]
    assert "Traceback" in arch["details"]["traceback"]
    assert len(doc["results"]) == len(checks.select([], [])) and doc["exit_code"] == 3
    text = CliRunner().invoke(app, ["doctor", "--root", str(root)])
    assert text.exit_code == 3 and "INTERNAL ERROR" in text.stdout


def test_the_emulated_rehearsal_check_imports_no_wheel_building():
    """checks/rehearsal.py reads REQUIRES_PYTHON from install/emulator_wheel.py on every doctor
    run against an emulated target: hashlib (OpenSSL), zipfile and base64 are for build()."""
    code = ("import sys\nfrom neuron_env.install.emulator_wheel import REQUIRES_PYTHON\n"
            "print(','.join(m for m in ('hashlib', 'zipfile', 'base64', "
            "'neuron_env.guards.atomic') if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       check=True)
    assert p.stdout.strip() == "", p.stdout
