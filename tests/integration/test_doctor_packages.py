"""doctor's target.packages: all of them in a small environment, only the Neuron/torch ones in
a large one (what checks and pipelines read), every one with --all-packages; schema-valid."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.helpers import roots
from tests.helpers.cli import REPO, run_cli
from tests.helpers.envs import add_dist, make_venv, site_packages

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/doctor.schema.json").read_text())


def test_large_environments_list_the_neuron_packages_unless_asked(tmp_path):
    py = make_venv(tmp_path / "v")
    site = site_packages(py)
    for name, version in {"torch": "2.14.0+cpu", "torch-neuronx": "2.14.3.0.1711",
                          "neuronx-cc": "2.28.7.0", "nki": "0.7.0"}.items():
        add_dist(site, name, version)
    for i in range(80):
        add_dist(site, f"filler-{i}", "1.0")
    root = roots.trn2_host(tmp_path / "r")
    args = ["doctor", "--root", str(root), "--python", str(py), "--format", "json"]
    doc = json.loads(run_cli(*args).stdout)
    jsonschema.validate(doc, SCHEMA)
    pk = doc["target"]["packages"]
    assert doc["target"]["packages_total"] == 84
    assert pk["torch-neuronx"] == "2.14.3.0.1711" and pk["nki"] == "0.7.0"
    assert not any(n.startswith("filler") for n in pk)
    full = json.loads(run_cli(*args, "--all-packages").stdout)
    jsonschema.validate(full, SCHEMA)
    assert len(full["target"]["packages"]) == 84
    assert [r["status"] for r in full["results"]] == [r["status"] for r in doc["results"]]
