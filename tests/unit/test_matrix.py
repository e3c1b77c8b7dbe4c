"""The matrix: bundled content, validation with located messages, resolver, import, fuzzing."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_env.errors import MatrixError, ResolutionError
from neuron_env.matrix import catalog
from neuron_env.matrix.importer import convert, load_manifest
from neuron_env.matrix.loader import load_file, parse_text
from neuron_env.matrix.resolver import resolve
from neuron_env.matrix.serialize import to_data, to_toml
from tests.helpers.cli import REPO

BUNDLED = REPO / "matrices" / "neuron-2.33.toml"
GOOD = BUNDLED.read_text()
MANIFEST = REPO / "tests" / "fixtures" / "n2-manifest.json"  # AWS's manifest, whole
SCHEMA = json.loads((REPO / "matrices" / "schema.json").read_text())


def problems(text: str) -> list:
    with pytest.raises(MatrixError) as ei:
        parse_text(text, "m.toml")
    return ei.value.problems


def test_bundled_233_content():
    m = catalog.select("2.33")
    assert m.release == "2.33" and m.status == "beta" and m.backend == "native"
    assert [str(p.torch) for p in m.pairs_newest_first()] == ["2.14.0", "2.13.0"]
    assert m.pair_for_neuronx("2.14.3.0.1711").torch_minor == "2.14"
    assert m.pair_for_neuronx("2.13.3.0").torch_minor == "2.13"
    assert m.pair_for_neuronx("2.14.2.0") is None
    assert m.python.contains("3.12.0") and m.python.contains("3.14.1")
    assert not m.python.contains("3.11.9") and not m.python.contains("3.15.0")
    assert {o.version for o in m.os if o.status == "supported"} == {"22.04", "24.04", "26.04"}
    u24, u26 = m.os_entry("ubuntu", "24.04"), m.os_entry("ubuntu", "26.04")
    assert u24.wheels is False and u26.wheels is True  # supported and wheels apart
    u22 = m.os_entry("ubuntu", "22.04")  # the sources disagree: both are kept, with sources
    assert (u22.status, u22.disputed_status) == ("supported", "end-of-support")
    assert u22.build_from_source and u22.wheels is False and u22.new_dlamis is False
    assert m.source_by_id(u22.source).url.startswith("https://github.com/aws-neuron/")
    assert m.source_by_id(u22.disputed_source) is not None
    assert m.family("trn2").supported and m.family("trn3").supported
    assert not m.family("trn1").supported and "Trn2" in m.family("trn1").reason
    assert m.instance_type("trn2.48xlarge")[1].devices == 16
    assert m.index_for("torch-neuronx").name == "neuron"
    assert m.index_for("torch").url == "https://download.pytorch.org/whl/cpu"
    assert m.placeholder("torch-neuronx", "1.0") and m.placeholder("nki", "0.0.1")
    assert m.placeholder("torch-neuronx", "2.14.3.0") is None


def test_bundled_matrices_match_the_json_schema():
    files = sorted((REPO / "matrices").glob("neuron-*.toml"))
    assert len(files) > 40  # 2.33 plus the imported XLA-based releases
    for f in files:
        m = load_file(f)
        jsonschema.validate(to_data(m), SCHEMA)


def test_round_trip_toml():
    m = parse_text(GOOD)
    again = parse_text(to_toml(m))
    assert to_data(again) == to_data(m)


def test_default_is_newest_and_env_var(monkeypatch, tmp_path):
    assert catalog.select().release == "2.34"  # the newest bundled release
    monkeypatch.setenv("NEURON_ENV_MATRIX", "2.31")
    assert catalog.select().release == "2.31.1"
    custom = tmp_path / "neuron-9.1.toml"
    custom.write_text(GOOD.replace('release = "2.33"', 'release = "9.1"'))
    monkeypatch.setenv("NEURON_ENV_MATRIX", str(custom))
    assert catalog.select().release == "9.1"
    assert catalog.select(str(tmp_path)).release == "9.1"  # a directory: its newest
    assert catalog.select("2.33").release == "2.33"  # the flag wins over the environment


def test_unknown_release_lists_known():
    with pytest.raises(Exception) as ei:
        catalog.select("1.0")
    assert "2.33" in str(ei.value) and ei.value.exit_code == 2


# -- bad input: every case located, MatrixError only -----------------------------------------
@pytest.mark.parametrize("mutate, where, words", [
    (lambda s: s.replace('torch = "2.14.0"', 'torch = "2.14.0-latest!"'), "pairs[0].torch",
     "PEP 440 version"),
    (lambda s: s.replace('requires = ">=3.12,<3.15"', 'requires = ">=3.12,<"'),
     "python.requires", "PEP 440 specifier"),
    (lambda s: s.replace('torch = "2.13.0"', 'torch = "2.14.0"'), "pairs[1].torch",
     "duplicate pair"),
    (lambda s: s.replace('status = "beta"', 'status = "beta"\ncolour = "red"'), "colour",
     "unknown key"),
    (lambda s: s.replace('release = "2.33"\n', ''), "release", "required key"),
    (lambda s: s.replace('devices = 16', 'devices = "sixteen"', 1),
     "instances[0].types[0].devices", "non-negative integer"),
    (lambda s: s.replace('disputed_status = "end-of-support"', 'disputed_status = "eol"'),
     "os[2].disputed_status",
     "expected one of"),
    (lambda s: s[:s.index("[[sources]]")], "sources", "names no [[sources]]"),
    (lambda s: s.replace('source = "trn2-arch"', 'source = "a-blog"', 1),
     "instances[0].types[0].source", "not declared"),
    (lambda s: s.replace('covers = ["dlami"]', 'covers = ["dlamis"]'), "sources[8].covers",
     "names no section"),
    (lambda s: s.replace('covers = ["os", "pairs", "python", "companions"]',
                         'covers = ["os", "pairs", "companions"]'), "sources", "[python]"),
    (lambda s: s.replace('url = "https://pip.repos.neuron.amazonaws.com"', 'url = "pip.repos"'),
     "indexes[0].url", "URL"),
    (lambda s: s.replace('torch_neuronx = "==2.14.3.0.*"', 'torch_neuronx = ">=2"'),
     "pairs[0].torch_neuronx", "pin a family"),
    (lambda s: s.replace('packages = ["torch"]', 'packages = ["torch", "nki"]'),
     "indexes[1].packages", "already assigned"),
])
def test_invalid_documents_are_located(mutate, where, words):
    text = mutate(GOOD)
    assert text != GOOD
    ps = problems(text)
    hit = [p for p in ps if p.path == where]
    assert hit, [p.render() for p in ps]
    assert words in hit[0].message
    if words not in ("required key", "names no [[sources]]"):  # missing: no line of its own
        assert hit[0].line is not None
        line = text.splitlines()[hit[0].line - 1]
        assert where.split(".")[-1].split("[")[0] in line or "[[" in line


def test_every_problem_is_listed_not_just_the_first():
    text = GOOD.replace('torch = "2.14.0"', 'torch = "x y"').replace(
        'status = "beta"', 'status = "alpha"')
    paths = {p.path for p in problems(text)}
    assert {"pairs[0].torch", "status"} <= paths


def test_malformed_toml_has_a_line():
    ps = problems(GOOD.replace("[python]", "[python"))
    assert ps[0].line and "not valid TOML" in ps[0].message


def test_empty_file_and_unreadable(tmp_path):
    (tmp_path / "e.toml").write_text("  \n")
    with pytest.raises(MatrixError, match="empty"):
        load_file(tmp_path / "e.toml")
    with pytest.raises(MatrixError, match="no such file"):
        load_file(tmp_path / "missing.toml")
    d = tmp_path / "d.toml"
    d.mkdir()
    with pytest.raises(MatrixError, match="directory"):
        load_file(d)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(MatrixError, match="UTF-8"):
        load_file(tmp_path / "bin.toml")
    if os.geteuid() != 0:  # root reads anything
        p = tmp_path / "locked.toml"
        p.write_text(GOOD)
        p.chmod(0)
        with pytest.raises(MatrixError, match="cannot be read"):
            load_file(p)


def test_directory_without_matrices(tmp_path):
    with pytest.raises(MatrixError, match="no matrix files"):
        catalog.select(str(tmp_path))


# -- fuzz: broken documents only ever raise MatrixError ----------------------------------------
LINES = GOOD.splitlines()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(LINES) - 1),
                          st.sampled_from(["drop", "dup", "garble", "retype", "truncate"]),
                          st.text(max_size=8)), min_size=1, max_size=6))
def test_fuzz_mutated_documents(edits):
    lines = list(LINES)
    for idx, op, junk in edits:
        idx %= len(lines)
        if op == "drop":
            lines.pop(idx)
        elif op == "dup":
            lines.insert(idx, lines[idx])
        elif op == "garble":
            lines[idx] = lines[idx][: len(lines[idx]) // 2] + junk
        elif op == "retype":
            lines[idx] = re.sub(r'"[^"]*"', "42", lines[idx], count=1)
        elif op == "truncate":
            lines = lines[: idx + 1]
        if not lines:
            lines = [junk]
    try:
        parse_text("\n".join(lines), "fuzz.toml")
    except MatrixError as e:
        assert e.problems and all(p.message for p in e.problems)


toml_scalars = st.one_of(st.text(max_size=12), st.integers(-5, 50), st.booleans(),
                         st.floats(allow_nan=False, allow_infinity=False))
toml_values = st.recursive(toml_scalars, lambda c: st.one_of(
    st.lists(c, max_size=4), st.dictionaries(st.sampled_from(
        ["name", "torch", "family", "supported", "types", "version", "id", "url", "spec",
         "status", "requires", "packages"]), c, max_size=5)), max_leaves=12)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(sorted(
    {"format", "release", "date", "status", "backend", "summary", "architectures", "python",
     "instances", "os", "pairs", "indexes", "companions", "placeholders", "limitations",
     "driver", "docs", "dlami", "extra"})), toml_values, max_size=14))
def test_fuzz_random_structures(doc):
    from neuron_env.errors import Problem
    from neuron_env.matrix import loader

    r = loader._Reader("fuzz.toml", "")
    try:
        loader._parse(r, doc, "fuzz.toml", False)
    except Exception as e:  # the structural pass must never crash on any shape
        pytest.fail(f"{type(e).__name__}: {e} for {doc!r}")
    assert all(isinstance(p, Problem) for p in r.problems)


# -- resolver ----------------------------------------------------------------------------------
def test_resolver():
    m = catalog.select("2.33")
    p = resolve(m, "3.12.4").pair
    assert [p.torch_requirement, p.neuronx_requirement, *(c.requirement for c in m.companions)] \
        == ["torch==2.14.0", "torch-neuronx==2.14.3.0.*", "neuronx-cc==2.*", "nki"]
    assert resolve(m, "3.14.0", "2.13").pair.torch_minor == "2.13"
    assert resolve(m, "3.13.1", "2.13.0").pair.torch_requirement == "torch==2.13.0"
    with pytest.raises(ResolutionError, match="outside"):
        resolve(m, "3.11.7")
    with pytest.raises(ResolutionError, match=r"no backend pair .* torch 2.12"):
        resolve(m, "3.12.0", "2.12")
    with pytest.raises(ResolutionError, match="not a version"):
        resolve(m, "3.12.0", "latest")


def test_resolver_pair_python_ranges():
    m = catalog.select("2.28.1")  # imported: torch 2.7.0 pair only up to Python 3.11
    assert resolve(m, "3.12.1").pair.torch_minor == "2.9"
    with pytest.raises(ResolutionError, match=r"supports Python 3\.12"):
        resolve(m, "3.12.1", "2.7")


# -- import from AWS's manifest ------------------------------------------------------------------
@pytest.mark.skipif(not MANIFEST.exists(), reason="tests/fixtures/n2-manifest.json is absent")
def test_import_manifest_xla_releases():
    res = convert(load_manifest(MANIFEST), str(MANIFEST))
    by = {m.release: m for m in res.matrices}
    assert "2.31.1" in by and "2.32.0" not in by
    assert dict(res.skipped)["2.32.0"].startswith("no torch-neuronx")
    m = by["2.31.1"]
    assert m.backend == "xla" and [str(p.torch) for p in m.pairs] == ["2.9.0"]
    assert m.pair_for_neuronx("2.9.0.2.15.32035") is not None
    assert m.family("trn1").supported and m.family("trn2").supported
    assert str(m.python) in ("<3.14,>=3.11", ">=3.11,<3.14")
    assert {a.name: a.version for a in m.driver.apt}["aws-neuronx-dkms"] == "2.29.0.0"
    for x in res.matrices:
        parse_text(to_toml(x))  # every generated file is valid


def test_bundled_imports_are_current():
    """matrices/neuron-2.*.toml (XLA) are exactly what `matrix import` writes today."""
    if not MANIFEST.exists():
        pytest.skip("tests/fixtures/n2-manifest.json is absent")
    res = convert(load_manifest(MANIFEST), str(MANIFEST))
    for m in res.matrices:
        f = REPO / "matrices" / f"neuron-{m.release}.toml"
        assert f.exists(), f"{f.name} missing: run neuron-env matrix import"
        assert to_data(load_file(f)) == to_data(m)


def test_import_bad_manifest(tmp_path):
    p = tmp_path / "m.json"
    p.write_text("{not json")
    with pytest.raises(MatrixError, match="not valid JSON"):
        load_manifest(p)
    p.write_text('{"releases": []}')
    with pytest.raises(MatrixError, match="neuron_releases"):
        load_manifest(p)
    with pytest.raises(MatrixError, match="none of the releases"):
        convert({"neuron_releases": []}, "x", ["9.9"])


def test_bundled_dir_exists():
    assert catalog.bundled_dir().is_dir()
    assert Path(catalog.bundled_dir() / "neuron-2.33.toml").exists()
