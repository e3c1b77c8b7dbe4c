"""util/versions.py: Ver and Spec give packaging's answers (they are compared with it here on
every form they answer themselves, and on forms they hand to packaging)."""

from __future__ import annotations

import itertools

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from neuron_env.util.versions import Spec, Ver

VERSIONS = ["0", "1", "1.0", "1.0.0", "2", "2.0", "2.13", "2.13.0", "2.13.1", "2.14", "2.14.0",
            "2.14.3", "2.14.3.0", "2.14.3.0.1234", "2.14.4.0", "2.9.0.2.11.19912", "3.10",
            "3.11.7", "3.12", "3.12.0", "3.14.99", "3.15", "3.15.0", "03.012", "10.0.1",
            # handed to packaging
            "2.13.0+cpu", "2.13.0+CPU", "2.13.0+cu121.1", "2.14.0rc1", "2.14.0.dev3",
            "2.14.0.post1", "1!2.0", "v2.14", " 2.14 ", "2.14.0a1+local", "1.0.post1",
            "1.0.0.post1", "1.0.post2", "1.0-1", "1.0.POST1", "1.0.post1+cpu", "1.0.1",
            "2.13.0+cpu-1_A", "1.0.post", "1.0\u2003"]
SPECS = ["", ">=3.12,<3.15", "<3.15,>=3.12", ">= 3.12 , <3.15", ">=3.10", "<3.15.0", "<=3.14",
         ">3.12", ">2.14.3", "==2.14.3.0.*", "==2.14.*", "!=2.14.*", "==2.*", "==2.0.*",
         "==2.14", "==2.14.0", "!=3.13", "==03.12", ">=0", " ,>=1,", "==2.14.3.0.1234",
         ">=2.13,!=2.13.1,<3",
         # handed to packaging
         "~=2.14.0", "===2.14", ">=2.14.0rc1", "==2.14.0+cpu", "==1.2.3,==1.2.3.0", ">=1!1",
         ">1.0", "<=1.0", "==1.0.*", "==1.0.post1", ">=1.0.post1", "==\u2003 3.12",
         ">=\t3.12,\u00a0<3.15 "]


@pytest.mark.parametrize("spec", SPECS)
def test_spec_agrees_with_packaging(spec):
    mine, theirs = Spec(spec), SpecifierSet(spec)
    assert str(mine) == str(theirs) and len(mine) == len(theirs)
    assert sorted(map(str, mine)) == sorted(map(str, theirs))
    assert sorted((s.operator, s.version) for s in mine) == sorted(
        (s.operator, s.version) for s in theirs)
    assert mine == theirs and mine == Spec(str(theirs)) and hash(mine) == hash(Spec(str(mine)))
    for v in VERSIONS:
        for pre in (True, None):
            want = theirs.contains(v, prereleases=pre)
            assert mine.contains(v, prereleases=pre) is want, (spec, v, pre)
            want = theirs.contains(Version(v), prereleases=pre)  # `===`: normalised text
            assert mine.contains(Ver(v), prereleases=pre) is want, (spec, v, pre)
            assert mine.contains(Version(v), prereleases=pre) is want, (spec, v, pre)
        assert (v in mine) == (v in theirs)


def test_ver_orders_like_packaging():
    for a, b in itertools.product(VERSIONS, repeat=2):
        x, y, px, py = Ver(a), Ver(b), Version(a), Version(b)
        assert (x == y, x < y, x <= y, x > y, x >= y, x != y) == (
            px == py, px < py, px <= py, px > py, px >= py, px != py), (a, b)
        assert (x == py, x < py, px == y, px < y, px > y) == (
            px == py, px < py, px == py, px < py, px > py), (a, b)
        if x == y:
            assert hash(x) == hash(y), (a, b)


@pytest.mark.parametrize("v", VERSIONS)
def test_ver_reads_like_packaging(v):
    mine, theirs = Ver(v), Version(v)
    for attr in ("release", "local", "major", "minor", "micro", "public", "base_version",
                 "is_prerelease", "is_postrelease", "is_devrelease", "epoch", "pre", "post",
                 "dev"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
    assert str(mine) == str(theirs) and repr(mine) == repr(theirs)
    assert str(Ver(mine)) == str(theirs) and Ver(theirs) == theirs


def test_sorting_and_sets():
    vs = [Ver(v) for v in VERSIONS]
    assert [str(v) for v in sorted(vs)] == [str(v) for v in sorted(map(Version, VERSIONS))]
    assert len({Ver("2.14"), Ver("2.14.0"), Ver("v2.14")}) == 1


@pytest.mark.parametrize("bad", ["", "2.14-bogus!", "latest", "1.0.0.0.x", "2.0+", "2.0+a..b",
                                 "\u00b2.1", "1..0", ".1", "1."])
def test_invalid_version_is_packagings_error(bad):
    with pytest.raises(InvalidVersion):
        Version(bad)
    with pytest.raises(ValueError) as e:
        Ver(bad)
    assert type(e.value) is InvalidVersion


@pytest.mark.parametrize("bad", ["<3.15.*", ">=", "=>3.12", "3.12", ">=3.12;", "~=1", "==1.*.*",
                                 ">=1..2", "==.*", ">= \u00b2"])
def test_invalid_specifier_is_packagings_error(bad):
    with pytest.raises(ValueError) as theirs:
        SpecifierSet(bad)
    with pytest.raises(ValueError) as mine:
        Spec(bad)
    assert type(mine.value) is type(theirs.value)


def test_simple_forms_never_import_packaging():
    """The forms answered here do not reach packaging (checked in a fresh interpreter by
    tests/integration/test_doctor_inprocess.py); here: no packaging object is built."""
    s = Spec(">=3.12,<3.15")
    assert s._real is None and s.contains("3.13.1") and not s.contains("3.15")
    v = Ver("2.13.0+cpu")
    assert v._pk is None and v.public == "2.13.0" and v.local == "cpu"
    assert Ver(v.public) == Ver("2.13") and v._pk is None
