"""The smaller documents (matrix list/validate, userdata, component, collectives --print-launch)
validate against their schemas, as printed by the CLI."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.helpers.cli import REPO, run_cli

pytestmark = pytest.mark.integration


def schema(name):
    return json.loads((REPO / f"neuron_env/schemas/{name}.schema.json").read_text())


@pytest.mark.parametrize("name,args", [
    ("matrix-list", ["matrix", "list", "--format", "json"]),
    ("matrix-validate", ["matrix", "validate", "matrices/neuron-2.33.toml", "--format", "json"]),
    ("collectives-launch", ["collectives", "--print-launch", "srun", "--format", "json"]),
    ("userdata", ["userdata", "--format", "json"]),
    ("component", ["imagebuilder-component", "--format", "json"]),
])
def test_small_documents_match_their_schemas(name, args):
    p = run_cli(*args)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, schema(name))
    assert doc["schema"] == f"neuron-env.{name}/1" and doc["exit_code"] == p.returncode


def test_rendered_scripts_in_json_are_the_text_output():
    src = ("--source", "/srv/wheelhouse")  # neuron-env is not on the public index (#44)
    for cmd in ("userdata", "imagebuilder-component"):
        doc = json.loads(run_cli(cmd, *src, "--backend", "emulated", "--format", "json").stdout)
        assert doc["script"] == run_cli(cmd, *src, "--backend", "emulated").stdout


def test_matrix_import_document(tmp_path):
    manifest = REPO / "tests/fixtures/n2-manifest-2.31.json"  # AWS's manifest, 2.31.x only
    p = run_cli("matrix", "import", str(manifest), "--out", str(tmp_path), "--release", "2.31",
                "--dry-run", "--format", "json")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, schema("matrix-import"))
    assert doc["dry_run"] is True and len(doc["written"]) == 2 and not list(tmp_path.iterdir())
