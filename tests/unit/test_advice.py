"""Advice that is true: an OS the matrix does not list is told to move only to releases the
matrix calls supported with no source disputing it (never one marked disputed or end of
support), those with prebuilt wheels first. Built from the matrix data, for every bundled
matrix that lists an OS."""

from __future__ import annotations

import pytest

from neuron_env import checks
from neuron_env.checks import fixes
from neuron_env.matrix import catalog
from tests.helpers.facts import host

RELEASES = sorted({e.release for e in catalog.available() if e.origin == "bundled"})
CTX = checks.Context(python_flag="/venv/bin/python")


@pytest.mark.parametrize("release", RELEASES)
def test_an_unlisted_os_is_pointed_only_at_plainly_supported_releases(release):
    m = catalog.select(release)
    if not m.os:
        pytest.skip(f"Neuron {release}'s matrix lists no OS")
    r = checks.run_checks(host(os_id="plan9", os_version="4"), m, CTX, ["os.release"])[0]
    assert r.status == "fail" and r.fix
    advice = r.fix.split(":")[0].removeprefix("move to ")
    named = [part.split(" (")[0] for part in advice.split(", else ")]
    for e in m.os:
        if e.disputed_status or e.status != "supported":
            assert e.label not in named, f"{e.label} ({e.status}/{e.disputed_status}) advised"
    targets = fixes.os_targets(m)
    if targets:
        assert named == [e.label for e in targets]  # every plain target, in order
        if any(e.wheels is True for e in targets):
            assert targets[0].wheels is True and "prebuilt wheels" in advice

def test_the_default_matrix_disputes_an_os_and_the_advice_leaves_it_out():
    m = catalog.select(None)
    disputed = [e for e in m.os if e.disputed_status or e.status != "supported"]
    if not disputed:
        pytest.skip(f"Neuron {m.release} disputes no OS")
    text, _ = fixes.dlami(m)
    assert not any(f"{e.label} (" in text or text.endswith(e.label) for e in disputed)
