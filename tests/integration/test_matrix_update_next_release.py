"""`matrix update` delivers the next release as data (issue #35): a neuron-env whose bundled set
stops at 2.33 (this code, with the bundled matrices minus 2.34, as an installed wheel ships
them in `_matrices/`) takes the real `matrices/neuron-2.34.toml` from a signed manifest served
over loopback HTTP, and then judges a Neuron 2.34 environment right, with no new neuron-env."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.helpers.cli import REPO, cli_env
from tests.helpers.envs import GOOD_234, add_dist, make_venv, site_packages
from tests.integration.test_matrix_update import DOCTOR, UPDATE, _manifest, digest, serve

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("openssl") is None,
                                 reason="openssl is not installed (it verifies the signature)")]
NEW = REPO / "matrices" / "neuron-2.34.toml"


@pytest.fixture
def old_neuron_env(tmp_path: Path) -> Path:
    """This neuron-env's code with the bundled set of the release before 2.34 (`_matrices/`,
    as the wheel installs it): a directory to run `python -m neuron_env` from."""
    root = tmp_path / "old"
    shutil.copytree(REPO / "neuron_env", root / "neuron_env",
                    ignore=shutil.ignore_patterns("__pycache__"))
    bundled = root / "neuron_env" / "_matrices"
    bundled.mkdir()
    for f in (REPO / "matrices").glob("neuron-*.toml"):
        if f.name != NEW.name:
            shutil.copy(f, bundled / f.name)
    return root


@pytest.fixture
def signed_site(tmp_path: Path) -> tuple[Path, Path]:
    """The publisher's side: the real 2.34 matrix, a manifest pinning its sha256, and the
    manifest's ECDSA signature (`index.json.sig`); (site directory, public key file)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pub = tmp_path / "matrices-signing-key.pub.pem"
    pub.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(NEW, site / NEW.name)
    manifest = _manifest([(NEW.name, digest(NEW.read_bytes()))]).encode()
    (site / "index.json").write_bytes(manifest)
    (site / "index.json.sig").write_bytes(key.sign(manifest, ec.ECDSA(hashes.SHA256())))
    return site, pub


def cli(root: Path, user: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuron_env", *args], capture_output=True,
                          text=True, timeout=120, cwd=root,
                          env=cli_env(NEURON_ENV_MATRIX_DIR=str(user), PYTHONPATH=str(root)))


def pairing(root: Path, user: Path, py: Path) -> tuple[dict, dict]:
    p = cli(root, user, "doctor", "--only", "backend.pairing", "--python", str(py),
            "--format", "json")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, DOCTOR)
    return doc["results"][0], doc["matrix"]


def test_an_older_bundled_set_is_updated_to_234_by_a_signed_manifest(
        tmp_path: Path, old_neuron_env: Path, signed_site: tuple[Path, Path]) -> None:
    root, (site, pub), user = old_neuron_env, signed_site, tmp_path / "user"
    py = make_venv(tmp_path / "v")
    for name, version in GOOD_234.items():  # what AWS's 2.34 instructions install
        add_dist(site_packages(py), name, version)
    listed = json.loads(cli(root, user, "matrix", "list", "--format", "json").stdout)
    assert listed["matrices"][0]["release"] == "2.33"  # the older neuron-env knows 2.33 at most
    r, m = pairing(root, user, py)
    assert m["release"] == "2.33" and r["status"] == "fail"
    assert "no known matrix pairs it" in r["summary"], r  # not "the XLA-based torch-neuronx"
    with serve(site) as url:
        p = cli(root, user, "matrix", "update", "--from", f"{url}/index.json",
                "--manifest-key", str(pub), "--format", "json")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, UPDATE)
    assert p.returncode == 0 and doc["signed"] is True, doc
    assert [(f["release"], f["action"]) for f in doc["files"]] == [("2.34", "install")]
    assert (user / NEW.name).read_bytes() == NEW.read_bytes()
    listed = json.loads(cli(root, user, "matrix", "list", "--format", "json").stdout)
    assert listed["matrices"][0] == {"release": "2.34", "path": str(user / NEW.name),
                                     "bundled": False, "default": True, "origin": "user"}
    r, m = pairing(root, user, py)
    assert m["release"] == "2.34" and m["origin"] == "user"
    assert m["sha256"] == digest(NEW.read_bytes())
    assert r["status"] == "pass" and "torch-neuronx 2.14.3.1.1802 with torch" in r["summary"]
