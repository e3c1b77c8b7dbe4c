"""Per-release OS support as AWS's release manifest states it: it does not. Its os_properties
name each OS once, for all releases together, with that OS's default Python; the importer says
so ("unstated", with the manifest as source) instead of claiming support per release."""

from __future__ import annotations

import json
from pathlib import Path

from neuron_env import checks
from neuron_env.install.plan import Inputs, make_plan
from neuron_env.matrix import catalog
from neuron_env.matrix.importer import _oses, convert, load_manifest
from tests.helpers.facts import host

MANIFEST = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "n2-manifest.json"
OS_KEYS = {"ubuntu18": ("ubuntu", "18.04"), "ubuntu20": ("ubuntu", "20.04"),
           "ubuntu22": ("ubuntu", "22.04"), "ubuntu24": ("ubuntu", "24.04"),
           "amazonlinux2": ("amzn", "2"), "amazonlinux2023": ("amzn", "2023"),
           "rockylinux9": ("rocky", "9")}


def test_no_imported_release_claims_an_os_the_manifest_does_not_give_it():
    data = json.loads(MANIFEST.read_text())
    default_py = {OS_KEYS[o["os"]]: o["default_python_version"] for o in data["os_properties"]}
    res = convert(load_manifest(MANIFEST), str(MANIFEST))
    assert len(res.matrices) == 50
    for m in res.matrices:
        assert {(e.id, e.version) for e in m.os} == set(default_py)
        for e in m.os:
            assert e.status == "unstated", (m.release, e.label)
            assert e.source == "n2-manifest" and m.source_by_id(e.source) is not None
            assert e.default_python == default_py[(e.id, e.version)]
            assert "does not say which releases support it" in (e.message or "")


def test_the_bundled_23_lists_ubuntu_2204_as_unstated_not_supported():
    e = catalog.select("2.3.0").os_entry("ubuntu", "22.04")
    assert e is not None and e.status == "unstated" and e.default_python == "3.10"


def test_a_default_python_that_is_no_plain_version_is_left_out():
    got = _oses([{"os": "ubuntu22", "default_python_version": "3.10; rm -rf /"},
                 {"os": "ubuntu20", "default_python_version": 3.8},
                 {"os": "amazonlinux2", "default_python_version": "3.8"},
                 {"os": "plan9", "default_python_version": "3.8"}, "junk"])
    assert [(e.label, e.default_python) for e in got] == [
        ("Ubuntu 22.04", None), ("Ubuntu 20.04", None), ("Amazon Linux 2", "3.8")]


def test_doctor_warns_where_the_source_does_not_say_instead_of_passing():
    """aws-neuron-sdk#647's host (Ubuntu 22.04, April 2023, Neuron 2.9.0): doctor used to pass
    os.release ("supported") on data the manifest never stated."""
    m = catalog.select("2.9.0")
    r = checks.run_checks(host(os_id="ubuntu", os_version="22.04"), m,
                          checks.Context(python_flag="/v/bin/python"), ["os.release"])[0]
    assert r.status == "warn", r.summary
    assert "without saying whether Neuron 2.9.0 supports it" in r.summary
    assert "release's notes" in (r.fix or "")
    assert "Ubuntu 22.04" in (r.expected or "")


def test_a_hand_written_supported_os_still_passes():
    r = checks.run_checks(host(os_id="ubuntu", os_version="24.04"), catalog.select("2.33"),
                          checks.Context(python_flag="/v/bin/python"), ["os.release"])[0]
    assert r.status == "pass", r.summary


def test_install_warns_but_does_not_refuse_an_unstated_os():
    m = catalog.select("2.21.1")
    p = make_plan(m, Inputs(python="/v/bin/python", python_version="3.10.12", prefix="/v",
                            os_id="ubuntu", os_version="22.04", arch="x86_64"))
    assert any("do not say whether it supports this OS" in w for w in p.warnings), p.warnings
