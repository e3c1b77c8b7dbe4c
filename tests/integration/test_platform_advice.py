"""Advice that agrees with itself (#44 item 7): on a host whose OS the Neuron apt repository does
not serve (Debian), no check tells the user to `apt-get install` Neuron packages while
driver.module/driver.packages say there is no such repository; the fleet HTML, which repeats
each failing check's fix, follows."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import roots
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def debian(tmp_path):
    # Debian 12 on a trn2 with only the driver's dkms package: the tools and collectives missing
    return roots.trn2_host(tmp_path / "debian", os="debian-12", tools=False,
                           packages={"aws-neuronx-dkms": "2.31.7.0"})


def test_debian_advice_never_says_apt_get_install(debian, tmp_path):
    p = run_cli("doctor", "--root", str(debian), "--format", "json")
    doc = json.loads(p.stdout)
    res = {r["id"]: r for r in doc["results"]}
    assert res["tools.path"]["status"] == "fail"
    assert res["backend.collectives"]["status"] == "fail"
    for cid in ("tools.path", "backend.collectives"):
        assert "apt-get install" not in (res[cid].get("fix") or ""), res[cid]
        assert not res[cid].get("fix_command"), res[cid]
        assert "has no Neuron apt repository" in res[cid]["fix"]
    text = run_cli("doctor", "--root", str(debian)).stdout
    assert "apt-get install" not in text, text
    report = tmp_path / "reports"
    report.mkdir()
    (report / "debian.json").write_text(p.stdout)
    page = run_cli("fleet", "report", str(report), "--format", "html").stdout
    assert "has no Neuron apt repository" in page and "apt-get install" not in page


def test_ubuntu_keeps_its_apt_get_line(tmp_path):
    root = roots.trn2_host(tmp_path / "ubuntu", tools=False)
    res = {r["id"]: r for r in json.loads(run_cli("doctor", "--root", str(root), "--format",
                                                  "json").stdout)["results"]}
    assert res["tools.path"]["fix_command"].startswith("sudo apt-get install -y")


def test_a_rehearsal_says_what_would_differ_on_trainium(tmp_path):
    """#44 item 8: a rehearsal venv on Python 3.11 is fine for the emulator, and the report
    says the release needs a newer Python on Trainium, with the other differences listed."""
    from tests.helpers.envs import add_dist, make_venv, pyenv_python, site_packages

    py311 = pyenv_python("3.11")
    if py311 is None:
        pytest.skip("no Python 3.11 on this machine")
    py = make_venv(tmp_path / "rehearsal", py311)
    site = site_packages(py)
    for name, version in {"torch": "2.14.0+cpu", "neuron-emulator": "0.1.0"}.items():
        add_dist(site, name, version)
    root = roots.make_root(tmp_path / "laptop", os="ubuntu-24.04", vendor=None)
    p = run_cli("doctor", "--root", str(root), "--python", str(py), "--only", "python",
                "--format", "json")
    r = next(x for x in json.loads(p.stdout)["results"] if x["id"] == "python.version")
    assert r["status"] == "pass" and "fine for the emulator" in r["summary"]
    assert "on Trainium Neuron 2.34 needs Python 3.12-3.14" in r["summary"], r["summary"]
    differs = r["details"]["on_trainium"]
    assert [d.split(":")[0] for d in differs] == ["Python", "compile time", "ops", "memory"]



OLD_RT = {**roots.DPKG_NEURON_233, "aws-neuronx-runtime-lib": "2.21.41.0",
          "aws-neuronx-collectives": "2.21.46.0"}
DRIVER_STATES = {  # each a state in which a driver.* check fails with a fix line
    "runtime-behind": dict(packages=OLD_RT, driver="2.19.64.0"),
    "legacy": dict(packages={**roots.DPKG_NEURON_233, "aws-neuron-dkms": "2.3.26.0"}),
    "module-not-loaded": dict(driver=None),
    "dkms-only": dict(packages={"aws-neuronx-dkms": "2.31.7.0"}, driver=None),
}


def _driver_fixes(root) -> tuple[dict, list[tuple[str, str]]]:
    doc = json.loads(run_cli("doctor", "--root", str(root), "--only", "driver",
                             "--format", "json").stdout)
    res = {r["id"]: r for r in doc["results"]}
    lines = [(cid, r.get(k) or "") for cid, r in res.items() for k in ("fix", "fix_command")]
    return res, lines


@pytest.mark.parametrize("state", sorted(DRIVER_STATES))
@pytest.mark.parametrize("os_name", ["debian-12", "amzn-2023"])
def test_driver_fix_lines_never_say_apt_get_where_neuron_has_no_apt(tmp_path, state, os_name):
    """#44 item 7 leftover: every driver.* fix line on Debian (no Neuron apt repository) and on
    Amazon Linux 2023 (rpm, Neuron's yum repository): no apt-get install names a Neuron
    package (Debian's own apt serves linux-headers; dpkg removes what it
    installed), no apt at all on rpm hosts."""
    from tests.helpers.hostparts import add_rpmdb

    kw = dict(DRIVER_STATES[state])
    pkgs = kw.pop("packages", dict(roots.DPKG_NEURON_233))
    rpm = os_name == "amzn-2023"
    root = roots.trn2_host(tmp_path / state, os=os_name, packages=None if rpm else pkgs, **kw)
    if rpm:
        add_rpmdb(root, pkgs)
    res, lines = _driver_fixes(root)
    assert any(r["status"] == "fail" for r in res.values()), res
    for cid, line in lines:
        if rpm:
            assert "apt-get" not in line and "dpkg" not in line, (cid, line)
            continue
        for cmd in re.split(r"&&|\|\||;|[{}]", line):
            assert not ("apt-get install" in cmd and "aws-neuron" in cmd), (cid, line)
