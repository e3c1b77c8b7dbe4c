"""`matrix import` of a hostile release manifest (issue #36, finding 26): the WHOLE manifest is
validated first (release names, duplicates, sizes, control characters, the index URL, and every
matrix as `matrix validate` would read it), then all files are written or none."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import REPO, run_cli

pytestmark = pytest.mark.integration

REAL = json.loads((REPO / "tests/fixtures/n2-manifest-2.31.json").read_text())


def good_release(version: str) -> dict[str, Any]:
    """A real 2.31.x entry of AWS's manifest, renamed."""
    rel = copy.deepcopy(next(r for r in REAL["neuron_releases"]
                             if r["neuron_version"] == "2.31.1"))
    rel["neuron_version"] = version
    return rel


def run_import(tmp_path: Path, doc: dict[str, Any], *extra: str) -> tuple[int, str, Path]:
    src, out = tmp_path / "manifest.json", tmp_path / "out"
    out.mkdir(exist_ok=True)
    (out / "neuron-2.0.0.toml").write_text("# a file that was there before\n")
    src.write_text(json.dumps(doc))
    res = run_cli("matrix", "import", str(src), "--out", str(out), *extra)
    assert "Traceback" not in res.stderr, res.stderr
    return res.returncode, res.stdout + res.stderr, out


def hostile(*releases: dict[str, Any], **top: Any) -> dict[str, Any]:
    doc = copy.deepcopy(REAL)
    doc["neuron_releases"] = list(releases)
    doc.update(top)
    return doc


def assert_nothing_written(out: Path) -> None:
    assert sorted(p.name for p in out.iterdir()) == ["neuron-2.0.0.toml"]


@pytest.mark.parametrize("name", ["2.31.5\x1f", "2.31.5 ", " 2.31.5", "2.31.5\n",
                                  "9" * 300, "2.31.5/../../x", "2.31.5\x1b[2J"])
def test_a_hostile_release_name_writes_nothing(tmp_path: Path, name: str) -> None:
    code, text, out = run_import(tmp_path, hostile(good_release("2.31.4"), good_release(name)))
    assert code == 2 and "release" in text, text
    assert_nothing_written(out)


def test_duplicate_releases_are_refused(tmp_path: Path) -> None:
    for dup in ("2.31.4", "2.31.4.0"):
        code, text, out = run_import(tmp_path, hostile(good_release("2.31.4"),
                                                       good_release(dup)))
        assert code == 2 and "twice" in text, text
        assert_nothing_written(out)


@pytest.mark.parametrize("field", ["manifest_version", "manifest_date"])
@pytest.mark.parametrize("char", ["\x1b", "\x7f"])
def test_control_characters_in_version_or_date_write_nothing(tmp_path: Path, field: str,
                                                             char: str) -> None:
    code, text, out = run_import(tmp_path, hostile(good_release("2.31.4"),
                                                   **{field: f"2{char}[31m"}))
    assert code == 2 and field in text, text
    assert_nothing_written(out)


def test_an_apt_version_with_escapes_writes_nothing(tmp_path: Path) -> None:
    rel = good_release("2.31.4")
    for p in rel["packages"]:
        if p["name"] == "aws-neuronx-dkms":
            p["version"] = "2.29.0.0\x1b]0;pwned\x07"
    code, text, out = run_import(tmp_path, hostile(rel))
    assert code == 2, text
    assert_nothing_written(out)


@pytest.mark.parametrize("url", ["https://pip.repos.neuron.amazonaws.com/\n",
                                 "https://pip.repos.neuron.amazonaws.com/ x",
                                 "http://[::1/simple", "file:///etc"])
def test_a_bad_index_url_writes_nothing(tmp_path: Path, url: str) -> None:
    code, text, out = run_import(tmp_path, hostile(
        good_release("2.31.4"), repos_n2=[{"repo_type": "whl", "repo_url": url}]))
    assert code == 2 and "repo_url" in text, text
    assert_nothing_written(out)


def test_the_real_manifest_still_imports_and_validates(tmp_path: Path) -> None:
    code, text, out = run_import(tmp_path, REAL)
    assert code == 0, text
    written = sorted(p.name for p in out.iterdir())
    assert "neuron-2.31.1.toml" in written and not [n for n in written if n.startswith(".")]
    assert run_cli("matrix", "validate", *[str(out / n) for n in written
                                           if n != "neuron-2.0.0.toml"]).returncode == 0
