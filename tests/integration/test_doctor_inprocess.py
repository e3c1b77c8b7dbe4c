"""doctor in-process and in a fresh interpreter: what it imports, a crashing check (exit 3).
Both start the target probe (a real process), so they are integration tests."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from neuron_env import checks
from neuron_env.cli import app
from tests.helpers import roots

pytestmark = pytest.mark.integration

# doctor must not import these: torch never, boto3 only with --aws, the install resolution
# machinery (and packaging's requirement/marker/tag parsers) only on install
# (install.plan, pure, is imported when a failing backend check asks the planner for a fix
# it would accept: #14's "never print a fix neuron-env would refuse")
NEVER = ("torch", "boto3", "botocore", "rich",
         "neuron_env.install.execute", "packaging.requirements", "packaging.markers",
         "packaging.tags")


def test_doctor_never_imports_torch_or_boto3(tmp_path):
    root = roots.trn2_host(tmp_path / "r")
    code = ("import sys\nfrom neuron_env.cli import main\nsys.argv=['neuron-env','doctor',"
            f"'--root',{str(root)!r},'--format','json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"bad=[m for m in {NEVER!r} if m in sys.modules]\n"
            "sys.stderr.write('IMPORTED=%s' % ','.join(bad))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "IMPORTED=" in p.stderr
    assert p.stderr.split("IMPORTED=")[-1].strip() == "", p.stderr
    assert json.loads(p.stdout)["schema"] == "neuron-env.doctor/1"


def test_crashing_check_gives_exit_3_and_a_full_report(tmp_path, monkeypatch):
    def boom(facts, m, ctx):
        raise RuntimeError("probe returned nonsense")

    checks.all_ids()
    monkeypatch.setattr(checks, "REGISTRY", [(i, c, boom if i == "os.arch" else f)
                                             for i, c, f in checks.REGISTRY])
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
