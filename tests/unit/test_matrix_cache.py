"""matrix/cache.py: a valid matrix's parse is kept and read back for the same text, path and
code; anything else is a miss, and the cache never fails a command."""

from __future__ import annotations

import pytest

from neuron_env.errors import MatrixError
from neuron_env.matrix import cache, catalog, loader
from neuron_env.matrix.serialize import to_data
from tests.helpers.cli import REPO

GOOD = (REPO / "matrices" / "neuron-2.33.toml").read_text()


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("NEURON_ENV_CACHE_DIR", str(d))
    monkeypatch.delenv("NEURON_ENV_NO_CACHE", raising=False)
    return d / "matrices"


def _no_parse(monkeypatch):
    """From here on, parsing TOML or checking semantics fails the test."""
    def refuse(*a, **k):
        raise AssertionError("parsed although cached")
    monkeypatch.setattr(loader, "toml", refuse)
    monkeypatch.setattr(loader, "_semantic_problems", refuse)


def test_second_load_reads_the_cache(cdir, tmp_path, monkeypatch):
    f = tmp_path / "neuron-2.33.toml"
    f.write_text(GOOD)
    first = loader.load_file(f)
    assert len(list(cdir.iterdir())) == 1
    _no_parse(monkeypatch)
    second = loader.load_file(f)
    assert second == first and to_data(second) == to_data(first)


def test_every_bundled_matrix_reads_back_equal(cdir, monkeypatch):
    entries = catalog.available()
    fresh = {e.release: loader.load_file(e.path, bundled=True) for e in entries}
    _no_parse(monkeypatch)
    for e in entries:
        assert to_data(loader.load_file(e.path, bundled=True)) == to_data(fresh[e.release])


def test_an_edit_is_a_miss_and_is_checked(cdir, tmp_path):
    f = tmp_path / "neuron-2.33.toml"
    f.write_text(GOOD)
    loader.load_file(f)
    f.write_text(GOOD.replace('status = "beta"', 'status = "bogus"', 1))
    with pytest.raises(MatrixError, match="bogus"):
        loader.load_file(f)


def test_same_text_elsewhere_is_checked_there(cdir, tmp_path):
    """The file name is part of validation (release vs neuron-<release>.toml)."""
    a, b = tmp_path / "neuron-2.33.toml", tmp_path / "x" / "neuron-2.34.toml"
    b.parent.mkdir()
    a.write_text(GOOD)
    b.write_text(GOOD)
    loader.load_file(a)
    with pytest.raises(MatrixError, match=r"2\.34"):
        loader.load_file(b)


def test_other_code_is_a_miss(cdir, tmp_path, monkeypatch):
    f = tmp_path / "neuron-2.33.toml"
    f.write_text(GOOD)
    loader.load_file(f)
    monkeypatch.setattr(cache, "code_fingerprint", lambda: ["another neuron-env"])
    assert cache.get(str(f), GOOD) is None
    assert loader.load_file(f).release == "2.33"


def test_corrupt_or_unwritable_cache_never_fails(cdir, tmp_path):
    f = tmp_path / "neuron-2.33.toml"
    f.write_text(GOOD)
    loader.load_file(f)
    (entry,) = cdir.iterdir()
    entry.write_text('{"source": 1')
    assert loader.load_file(f).release == "2.33"  # a miss, and written again
    assert cache.get(str(f), GOOD) is not None
    entry.unlink()
    cdir.rmdir()
    cdir.write_text("a file where the directory should be")
    assert loader.load_file(f).release == "2.33"


def test_off_and_toml_dates(cdir, tmp_path, monkeypatch):
    f = tmp_path / "neuron-2.33.toml"
    f.write_text(GOOD.replace('date = "2026-10-19"', "date = 2026-10-19", 1))  # a TOML date
    m = loader.load_file(f)
    assert m.date == "2026-10-19" and cache.get(str(f), f.read_text())["date"].year == 2026
    monkeypatch.setenv("NEURON_ENV_NO_CACHE", "1")
    g = tmp_path / "neuron-2.33.toml"
    g.write_text(GOOD)
    for p in cdir.iterdir():
        p.unlink()
    loader.load_file(g)
    assert list(cdir.iterdir()) == []
