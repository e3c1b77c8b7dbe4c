"""Every JSON document neuron-env prints, produced by the INSTALLED WHEEL (not this checkout)
and validated against the schema that wheel ships: a $ref that only resolves in the checkout,
or a document that misses its own schema, fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import roots
from tests.helpers.cli import REPO, cli_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
           "PIP_CONFIG_FILE": os.devnull}
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--no-index", "-q", "-w", str(out), str(REPO)], capture_output=True,
                       text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    site = out / "site"
    with zipfile.ZipFile(next(out.glob("neuron_env-*.whl"))) as z:
        z.extractall(site)  # what pip install --target does for a pure wheel
    return site


def cli(site: Path, tmp_path: Path, *args: str) -> tuple[dict, int]:
    env = cli_env(PYTHONPATH=str(site))
    code = ("import neuron_env, sys; assert neuron_env.__file__.startswith(sys.argv[1]), "
            "neuron_env.__file__; sys.argv[1:2] = []; from neuron_env.cli import main; "
            "sys.argv[0] = 'neuron-env'; main()")
    p = subprocess.run([sys.executable, "-c", code, str(site), *args], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=120)
    assert p.stdout.strip(), p.stderr
    return json.loads(p.stdout), p.returncode


def schema_for(site: Path, doc: dict) -> dict:
    name = doc["schema"].split("/")[0].split(".", 1)[1]
    return json.loads((site / "neuron_env/schemas" / f"{name}.schema.json").read_text())


def test_every_document_validates_against_the_wheels_schema(wheel_site, tmp_path):
    root = roots.trn2_host(tmp_path / "r")
    nope = str(tmp_path / "nope")
    runs = {
        "doctor": ["doctor", "--root", str(root), "--python", nope, "--format", "json"],
        "doctor error": ["doctor", "--matrix", "nope", "--format", "json"],
        "checks": ["doctor", "--list-checks", "--format", "json"],
        "instance": ["instance", "trn2.48xlarge", "--format", "json"],
        "instance none detected": ["instance", "--root", str(root / "dev"), "--format", "json"],
        "instance unknown family": ["instance", "trn9.foo", "--format", "json"],
        "matrix": ["matrix", "show", "--format", "json"],
        "matrix error": ["matrix", "show", "9.99", "--format", "json"],
        "install error": ["install", "--python", nope, "--format", "json", "--dry-run"],
        "smoke error": ["smoke", "--python", nope, "--format", "json"],
    }
    seen = {}
    for what, args in runs.items():
        doc, rc = cli(wheel_site, tmp_path, *args)
        jsonschema.validate(doc, schema_for(wheel_site, doc))
        assert doc["exit_code"] == rc, what
        seen[what] = rc
    assert seen["instance unknown family"] == 2 and seen["instance none detected"] == 2
    assert seen["doctor"] == 1 and seen["instance"] == 0 and seen["matrix"] == 0


def test_the_matrix_schema_copy_matches_the_matrix_format():
    src = json.loads((REPO / "matrices/schema.json").read_text())
    copy = json.loads((REPO / "neuron_env/schemas/matrix.schema.json").read_text())
    assert copy["$defs"]["matrix_content"] == {k: v for k, v in src.items()
                                               if k not in ("$schema", "$id")}, (
        "matrices/schema.json changed: copy it into matrix.schema.json's $defs.matrix_content")
    assert "../" not in json.dumps(copy)
