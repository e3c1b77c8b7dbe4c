"""Every bundled release is a promise: a host that holds exactly the release's own versions (apt
and pip), on every instance family the release supports, passes every version check.

(Imported releases 2.20.0-2.21.1 once took the Inf1 runtime row of AWS's manifest: a correct
trn1/inf2 host failed driver.versions and the fix downgraded its runtime.)"""

from __future__ import annotations

import re

import pytest

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.matrix.loader import load_file
from neuron_env.matrix.model import Matrix, Pair
from tests.helpers.facts import host, target

VERSION_CHECKS = ["python.version", "backend.torch", "backend.pairing", "backend.tools",
                  "backend.lineage", "backend.stack", "backend.torch_neuron", "backend.collectives",
                  "backend.pins", "driver.packages", "driver.versions"]
CTX = checks.Context(python_flag="/venv/bin/python")


BUNDLED = {e.release: e.path for e in catalog.scan(catalog.bundled_dir(), bundled=True)}


def _cases() -> list[tuple[str, str]]:
    out = []
    for release, path in sorted(BUNDLED.items()):
        out += [(release, f.family) for f in load_file(path).instances if f.supported]
    return out


def _python(m: Matrix, pair: Pair) -> str:
    for minor in range(7, 16):
        v = f"3.{minor}.9"
        if m.python.contains(v) and pair.supports_python(v):
            return v
    raise AssertionError(f"no Python for {m.release} / torch {pair.torch}")


def _neuronx(pair: Pair) -> str:
    """An exact torch-neuronx of the pair's family (`==2.14.3.0.*` -> 2.14.3.0.1711)."""
    spec = str(pair.torch_neuronx).lstrip("=")
    return re.sub(r"\.\*$", ".1711", spec)


def _pip(m: Matrix, pair: Pair, family: str) -> dict[str, str]:
    pkgs = {"torch": str(pair.torch), "torch-neuronx": _neuronx(pair)}
    for c in m.companions:  # neuronx-cc ==2.*, nki: any (the stack pins them where it knows)
        pkgs[c.name] = "2.28.7.0" if c.name == "neuronx-cc" else "0.7.0"
    for r in m.stack:
        if r.torch in (None, pair.torch_minor) and (not r.families or family in r.families):
            pkgs[r.name] = r.version
    return pkgs


def _apt(m: Matrix) -> dict[str, str]:
    known = {"aws-neuronx-dkms": "2.31.7.0", "aws-neuronx-runtime-lib": "2.35.30.0",
             "aws-neuronx-collectives": "2.35.43.0", "aws-neuronx-tools": "2.33.38.0"}
    return {a.name: a.version or known[a.name] for a in m.driver.apt}


def test_every_bundled_release_is_walked():
    cases = _cases()
    assert len({r for r, _ in cases}) == len(BUNDLED) >= 50
    assert ("2.20.0", "trn1") in cases and ("2.21.1", "inf2") in cases


@pytest.mark.parametrize(("release", "family"), _cases())
def test_the_release_own_versions_pass_every_version_check(release, family):
    full = load_file(BUNDLED[release])
    m = full.for_family(family)
    fam = full.family(family)
    itype = fam.types[0].name if fam and fam.types else f"{family}.48xlarge"
    for pair in full.pairs:
        facts = host(instance=itype, os_id="ubuntu", os_version="22.04", apt=_apt(m),
                     module=_apt(m).get("aws-neuronx-dkms"),
                     tgt=target(_pip(m, pair, family), _python(full, pair)))
        for r in checks.run_checks(facts, full, CTX, VERSION_CHECKS):
            assert r.status in ("pass", "skip"), (release, family, str(pair.torch), r.id,
                                                  r.status, r.summary)


def test_the_2_21_runtime_is_the_trn1_inf2_row_not_the_inf1_one():
    m = load_file(BUNDLED["2.21.1"])
    assert m.apt("aws-neuronx-runtime-lib").version == "2.23.112.0"  # Inf1's is 2.12.23.0
    assert m.apt("aws-neuronx-collectives").version == "2.23.135.0"
