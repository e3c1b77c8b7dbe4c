"""The smaller documents (matrix list/validate, userdata, component, collectives --print-launch)
validate against their schemas, as printed by the CLI."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.integration


def schema(name):
    return json.loads((REPO / f"neuron_env/schemas/{name}.schema.json").read_text())


@pytest.mark.parametrize("name,args", [
    ("matrix-list", ["matrix", "list", "--format", "json"]),
    ("matrix-validate", ["matrix", "validate", "matrices/neuron-2.33.toml", "--format", "json"]),
    ("collectives-launch", ["collectives", "--print-launch", "srun", "--format", "json"]),
])
def test_small_documents_match_their_schemas(name, args):
    p = run_cli(*args)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, schema(name))
    assert doc["schema"] == f"neuron-env.{name}/1" and doc["exit_code"] == p.returncode
