"""Untrusted text reaching terminals, engines and documents (#25 items 14-16): a node's report,
a host's driver version, dpkg `Version:` or a dist's METADATA with escape sequences goes through
the one sanitiser (guards.text.clean) on its way out of every renderer and sink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import roots
from tests.helpers.cli import REPO, cli_env

pytestmark = pytest.mark.integration

# an OSC window title, clear screen, cursor home, a fake green verdict, a bell, \x01 for XML
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[H\x1b[32mALL GOOD\x1b[0m\x01\r"
RAW = ("\x1b", "\x07", "\x01", "\r")


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """run_cli with the bytes as written (text mode would turn a raw CR into a newline)."""
    p = subprocess.run([sys.executable, "-m", "neuron_env", *args], capture_output=True,
                       env=env or cli_env(), timeout=120, cwd=REPO)
    p.stdout = p.stdout.decode("utf-8", "surrogateescape")
    p.stderr = p.stderr.decode("utf-8", "surrogateescape")
    return p


def _clean(out: str) -> None:
    for c in RAW:
        assert c not in out, f"{c!r} reached the output raw"


def _doctor_report(iid: str, summary: str, exit_code: int = 1) -> dict:
    return {"schema": "neuron-env.doctor/1", "exit_code": exit_code,
            "summary": {"pass": 0, "warn": 0, "fail": 1, "skip": 0, "error": 0},
            "target": {"instance": {"instance_id": iid, "type": "trn2" + EVIL},
                       "packages": {"torch": "2.13" + EVIL}},
            "results": [{"id": "os.release" + EVIL, "category": "os", "status": "fail",
                         "summary": summary}]}


def test_fleet_report_escapes_a_nodes_control_characters(tmp_path):
    d = tmp_path / "reports"
    d.mkdir()
    (d / "a.json").write_text(json.dumps(_doctor_report("i-0aaa" + EVIL, "bad " + EVIL)))
    (d / "b.json").write_text(json.dumps(_doctor_report("i-0bbb", EVIL, 0)))
    text = run_cli("fleet", "report", str(d))
    assert text.returncode == 1
    _clean(text.stdout)
    assert "\\x1b]0;pwned" in text.stdout  # shown, visibly
    junit = run_cli("fleet", "report", str(d), "--format", "junit")
    _clean(junit.stdout)
    root = ET.fromstring(junit.stdout.encode())  # well-formed XML 1.0
    assert len(root.findall(".//testcase")) == 2
    from junitparser import JUnitXml

    (tmp_path / "f.xml").write_text(junit.stdout)
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "f.xml"))))
    assert suite.tests == 2
    js = run_cli("fleet", "report", str(d), "--format", "json")
    assert json.loads(js.stdout)["summary"]["instances"] == 2  # JSON escapes by itself


def test_fleet_text_view_keeps_each_value_on_its_line(tmp_path):
    """A node's instance id, check id and summary holding a newline forged whole lines of the
    text view (a passing instance, a clean verdict): every control character is escaped."""
    d = tmp_path / "reports"
    d.mkdir()
    forged = "\n  i-0fake                 pass        all good\nverdict: PASS"
    (d / "a.json").write_text(json.dumps(_doctor_report("i-0aaa" + forged, "bad" + forged)))
    text = run_cli("fleet", "report", str(d))
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert "verdict: PASS" not in lines and not any(ln.startswith("  i-0fake") for ln in lines)
    assert lines[-1] == "verdict: FAIL" and "\\x0a" in text.stdout


def _hostile_root(tmp_path: Path) -> Path:
    """A trn2 whose driver version, dpkg Version: fields and a dist's METADATA carry escapes."""
    pk = dict(roots.DPKG_NEURON_233)
    pk["aws-neuronx-runtime-lib"] = "2.35.30.0" + EVIL
    pk["aws-neuronx-dkms"] = "2.31.7.0" + EVIL
    # the OS passes: the first failing check (the one nhc/npd/Slurm show) is the driver's
    return roots.trn2_host(tmp_path / "root", driver="2.31.7.0" + EVIL, packages=pk)


@pytest.mark.parametrize("fmt", ["nhc", "npd", "markdown", "prometheus", "junit", "text"])
def test_doctor_formats_escape_host_strings(tmp_path, fmt):
    root = _hostile_root(tmp_path)
    # a Neuron 2.33 host: 2.33's component versions make driver.versions fail on the escapes
    # (2.34 states no versions to compare)
    p = run_cli("doctor", "--root", str(root), "--only", "os,instance,driver", "--matrix",
                "2.33", "--format", fmt)
    assert p.returncode == 1, p.stderr
    _clean(p.stdout)
    _clean(p.stderr)
    if fmt == "prometheus":
        from prometheus_client.parser import text_string_to_metric_families

        fams = {f.name: f for f in text_string_to_metric_families(p.stdout)}
        rt = fams["neuron_env_info"].samples[0].labels["runtime"]
        assert rt.startswith("2.35.30.0\\x1b]0;pwned") and "\x1b" not in rt
    elif fmt == "junit":
        ET.fromstring(p.stdout.encode())
    elif fmt in ("nhc", "npd"):
        assert p.stdout.count("\n") == 1
        # escaped where it shows; npd's 80 characters may end at a word boundary before it
        assert "\\x1b]0;pwn" in p.stdout or (fmt == "npd" and p.stdout.rstrip().endswith("…"))


def test_doctor_text_keeps_each_host_string_on_its_line(tmp_path):
    """A dpkg Version: holding a newline forged a passing check line in doctor's text view."""
    pk = dict(roots.DPKG_NEURON_233)
    forged = "\n    ✓ everything checked  (forged.ok)\n\nOK: 9 pass (exit 0)"
    pk["aws-neuronx-dkms"] = "2.31.7.0" + forged
    root = roots.trn2_host(tmp_path / "root", driver="2.31.7.0" + forged, packages=pk)
    p = run_cli("doctor", "--root", str(root), "--only", "os,instance,driver", "-v")
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    assert not any(ln.lstrip().startswith("✓ everything checked") for ln in lines), p.stdout
    assert "OK: 9 pass (exit 0)" not in lines


def test_dist_metadata_version_is_escaped(tmp_path):
    """A dist-info METADATA with a hostile Version: reaches every format escaped."""
    site = tmp_path / "site"
    dist = site / "torch-2.13.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0{EVIL}\n")
    (site / "torch").mkdir()
    (site / "torch/__init__.py").write_text("")
    env = cli_env(PYTHONPATH=str(site))
    for fmt in ("markdown", "text", "junit", "prometheus", "nhc"):
        p = run_cli("doctor", "--python", sys.executable, "--only", "backend",
                    "--format", fmt, env=env)
        _clean(p.stdout)
        if fmt == "junit":
            ET.fromstring(p.stdout.encode())


def test_slurm_drain_reason_is_escaped(tmp_path):
    """`doctor --slurm-drain`: the reason= scontrol gets has no control character (a recording
    scontrol on PATH stands in for Slurm's)."""
    root = _hostile_root(tmp_path)
    log = tmp_path / "argv"
    bin_ = tmp_path / "bin"
    roots.add_executable(bin_ / "scontrol",
                         f'for a in "$@"; do printf "%s\\0" "$a"; done >> {log}\n'
                         'echo "NodeName=n State=IDLE Reason=none"\n')
    env = cli_env(PATH=f"{bin_}:{os.environ['PATH']}", SLURMD_NODENAME="n")
    p = run_cli("doctor", "--root", str(root), "--only", "os,instance,driver", "--slurm-drain",
                "--matrix", "2.33", "--format", "nhc", env=env)
    args = log.read_bytes().split(b"\0")
    reason = next(a for a in args if a.startswith(b"reason="))
    assert b"pwned" in reason  # the hostile text is there, escaped
    assert b"\x1b" not in reason and b"\r" not in reason and b"\x07" not in reason, reason
    _clean(p.stdout)


def test_exit_2_junit_document_is_well_formed(tmp_path):
    p = run_cli("doctor", "--matrix", str(tmp_path / "nope\x01\x1b[2J.toml"), "--format", "junit")
    assert p.returncode == 2
    _clean(p.stdout)
    _clean(p.stderr)
    root = ET.fromstring(p.stdout.encode())
    assert "\\x01" in root.find(".//error").get("message")
    for fmt in ("markdown", "nhc", "npd", "prometheus"):
        q = run_cli("doctor", "--matrix", str(tmp_path / "nope\x01\x1b[2J.toml"),
                    "--format", fmt)
        assert q.returncode == 2
        _clean(q.stdout)


def test_k8s_manifests_refuse_a_carriage_return_in_doctor_args():
    """The CR that turned the ConfigMap into a `kind: Secret`: refused (exit 2), as userdata
    refuses control characters; a clean value still gives five valid manifests."""
    import kubernetes_validate
    import yaml

    evil = "--skip aws\rkind: Secret\rstringData:\r  token: x"
    p = run_cli("k8s-manifests", "--doctor-args", evil)
    assert p.returncode == 2 and "Secret" not in p.stdout
    assert "control character" in p.stderr
    j = run_cli("k8s-manifests", "--doctor-args", evil, "--format", "json")
    assert j.returncode == 2 and json.loads(j.stdout)["error"]["code"]
    ok = run_cli("k8s-manifests", "--doctor-args", "--skip 'a\"b\\\\c: d' --only os")
    assert ok.returncode == 0, ok.stderr
    docs = list(yaml.safe_load_all(ok.stdout))
    assert [d["kind"] for d in docs] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                         "ConfigMap", "DaemonSet"]
    version = kubernetes_validate.latest_version()
    for d in docs:
        kubernetes_validate.validate(d, version, strict=True)
