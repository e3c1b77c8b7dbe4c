"""The install no-op: a target whose manifest says the same plan is complete is probed ONCE
and nothing of resolution is imported (install.execute, packaging's requirement parsers)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.envs import add_dist, make_venv, site_packages

pytestmark = pytest.mark.integration

RESOLUTION = ("neuron_env.install.execute", "neuron_env.install.provenance",
              "packaging.requirements", "packaging.markers", "packaging.tags")

WRAPPER = f"""
import json, sys
from neuron_env.guards import proc
spawned = []
real = proc.spawn
def counting(argv, **kw):
    spawned.append(argv[-1])
    return real(argv, **kw)
proc.spawn = counting
from neuron_env.cli import main
sys.argv = ["neuron-env", "install", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nAUDIT=" + json.dumps({{
    "imported": [m for m in {RESOLUTION!r} if m in sys.modules],
    "probes": [a for a in spawned if a.endswith("probe.py")]}}))
"""


def test_noop_probes_once_and_imports_no_resolution(tmp_path):
    py = make_venv(tmp_path / "v")
    site = site_packages(py)
    add_dist(site, "torch", "2.13.0")
    args = ["--backend", "emulated", "--python", str(py), "--format", "json"]
    dry = run_cli("install", *args, "--dry-run", timeout=120)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    plan = json.loads(dry.stdout)["plan"]
    for r in plan["requirements"]:  # the plan's packages are present...
        _name, _, version = r["requirement"].partition("==")
        if r["name"] != "torch":
            add_dist(site, r["name"], version or "1.0")
    man = tmp_path / "v" / ".neuron-env" / "install-manifest.json"
    man.parent.mkdir()
    man.write_text(json.dumps({  # ...and neuron-env recorded the same plan as complete
        "schema": "neuron-env.manifest/1", "status": "complete", "plan": {"key": plan["key"]},
        "packages": [], "tool": {"name": "neuron-env", "version": "test"},
        "created": "2026-01-01T00:00:00Z"}))
    p = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True,
                       timeout=120, cwd=REPO, env=cli_env())
    doc = json.loads(p.stdout)
    assert doc["status"] == "unchanged" and doc["steps"] == [], p.stderr
    assert "nothing to do" in json.dumps(doc["results"])
    audit = json.loads(p.stderr.rsplit("AUDIT=", 1)[1])
    assert audit == {"imported": [], "probes": [audit["probes"][0]]}, audit
