"""Advice that agrees with itself (#44 item 7): on a host whose OS the Neuron apt repository does
not serve (Debian), no check tells the user to `apt-get install` Neuron packages while
driver.module/driver.packages say there is no such repository; the fleet HTML, which repeats
each failing check's fix, follows."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.helpers import roots

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
