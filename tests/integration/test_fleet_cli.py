"""The fleet and engine commands end to end: 1,000 real-derived doctor reports through
`fleet report` (JSON schema, JUnit consumer), `fleet report s3://` against moto, doctor's
nhc/npd/prometheus formats, `slurm-healthcheck` (shellcheck) and `k8s-manifests`
(Kubernetes schemas)."""

from __future__ import annotations

import json
import shutil
import subprocess

import jsonschema
import pytest
import yaml

from tests.helpers import fleet_reports, roots
from tests.helpers.aws import aws_env, boto
from tests.helpers.cli import REPO, run_cli

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/fleet.schema.json").read_text())


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("fleet")
    real = fleet_reports.real_reports(base / "roots")
    counts = fleet_reports.write_fleet(base / "reports", real)
    return base / "reports", counts, real


def test_thousand_reports_aggregate(fleet_dir):
    d, counts, _ = fleet_dir
    p = run_cli("fleet", "report", str(d), "--format", "json")
    body = json.loads(p.stdout)
    jsonschema.validate(body, SCHEMA)
    s = body["summary"]
    assert p.returncode == 1 and s["instances"] == 1000
    # an older driver fails driver.versions against the 2.33 pins (#15)
    assert s["fail"] == counts["os"] + counts["driver"] and s["unreadable"] == 1
    assert s["pass"] + s["warn"] == counts["pass"] + counts["torch"]
    fc = {f["id"]: f for f in body["failing_checks"]}
    assert fc["os.release"]["count"] == counts["os"]
    drift = {x["component"]: x for x in body["drift"]["drifting"]}
    assert body["drift"]["versions"]["torch"] == {"2.13.0": 999 - counts["torch"],
                                                  "2.14.0": counts["torch"]}
    assert drift["driver"]["off_majority"] == counts["driver"]
    assert drift["driver"]["majority"] == "2.31.7.0"


def test_thousand_reports_junit_and_text(fleet_dir, tmp_path):
    from junitparser import JUnitXml

    d, counts, _ = fleet_dir
    p = run_cli("fleet", "report", str(d), "--format", "junit")
    (tmp_path / "fleet.xml").write_text(p.stdout)
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "fleet.xml"))))
    assert suite.tests == 1000 and len(list(suite)) == 1000
    assert suite.failures == counts["os"] + counts["driver"] and suite.errors == 1
    text = run_cli("fleet", "report", str(d)).stdout
    assert "fleet: 1000 instances" in text and "drift: torch" in text
    assert "verdict: FAIL" in text


def test_fleet_report_reads_s3_at_the_ssm_layout(fleet_dir, moto_url):
    _, _, real = fleet_dir
    s3 = boto("s3", moto_url)
    s3.create_bucket(Bucket="reports")
    cmd = "0b7e8f9a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    for iid, kind in (("i-0aaaaaaaaaaaaaaa1", "pass"), ("i-0aaaaaaaaaaaaaaa2", "os")):
        s3.put_object(Bucket="reports", Key=f"fleet/{cmd}/{iid}/awsrunShellScript/"
                      "0.awsrunShellScript/stdout", Body=json.dumps(real[kind]).encode())
    s3.put_object(Bucket="reports", Key="fleet/daemonset/node-3.json",
                  Body=json.dumps(real["pass"]).encode())
    p = run_cli("fleet", "report", "s3://reports/fleet", "--format", "json",
                env=aws_env(moto_url))
    body = json.loads(p.stdout)
    jsonschema.validate(body, SCHEMA)
    # the SSM layout names the instance; a report's own instance id wins elsewhere
    assert sorted(r["id"] for r in body["instances"]) == [
        "i-0123456789abcdef0", "i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa2"]
    assert body["summary"]["fail"] == 1 and p.returncode == 1
    missing = run_cli("fleet", "report", "s3://reports/nothing", "--format", "json",
                      env=aws_env(moto_url))
    assert missing.returncode == 2 and "no reports" in json.loads(missing.stdout)["error"][
        "message"]


def test_doctor_engine_formats(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    good = roots.trn2_host(tmp_path / "good")
    bad = roots.trn2_host(tmp_path / "bad", os="debian-12")
    args = ["--only", "os,instance,driver"]
    ok = run_cli("doctor", "--root", str(good), *args, "--format", "npd")
    ko = run_cli("doctor", "--root", str(bad), *args, "--format", "npd")
    assert (ok.returncode, ko.returncode) == (0, 1)
    assert ok.stdout.count("\n") == ko.stdout.count("\n") == 1 and len(ko.stdout) <= 81
    prom = run_cli("doctor", "--root", str(bad), *args, "--format", "prometheus",
                   "--report", f"json:{tmp_path / 'r.json'}")
    fams = {f.name: f for f in text_string_to_metric_families(prom.stdout)}
    assert fams["neuron_env_doctor_exit_code"].samples[0].value == 1
    assert fams["neuron_env_info"].samples[0].labels["runtime"] == "2.35.30.0-5e3a1b2c4"
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 1
    for fmt in ("npd", "nhc"):  # doctor cannot run: still one line for the engine
        broken = run_cli("doctor", "--matrix", "no-such", "--format", fmt)
        assert broken.returncode == 2 and broken.stdout.count("\n") == 1
        assert broken.stdout.startswith("ERROR: neuron-env: --matrix 'no-such'")
    textfile = tmp_path / "neuron_env.prom"
    run_cli("doctor", "--root", str(good), *args, "--report", f"prometheus:{textfile}")
    assert "neuron_env_doctor_verdict" in textfile.read_text()


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed "
                    "(apt-get install shellcheck; .ci/run does)")
def test_slurm_healthcheck_is_shellcheck_clean(tmp_path):
    p = run_cli("slurm-healthcheck", "--doctor-args", "--only os,driver --matrix 2.33")
    assert p.returncode == 0
    (tmp_path / "hc.sh").write_text(p.stdout)
    sc = subprocess.run(["shellcheck", "-s", "bash", str(tmp_path / "hc.sh")],
                        capture_output=True, text=True, timeout=60)
    assert sc.returncode == 0, sc.stdout
    assert "timeout -k 5 \"$LIMIT\"" in p.stdout and "LIMIT=45" in p.stdout
    for args in (["--timeout", "60"], ["--neuron-env", "neuron-env"],
                 ["--doctor-args", "--format json"]):
        assert run_cli("slurm-healthcheck", *args).returncode == 2, args
    conf = run_cli("slurm-healthcheck", "--slurm-conf", "--prolog", "--interval", "120").stdout
    assert "HealthCheckProgram=/etc/slurm/neuron-env-healthcheck.sh" in conf
    assert "HealthCheckInterval=120" in conf and "\nProlog=" in conf


def test_k8s_manifests_yaml_and_json(tmp_path):
    import kubernetes_validate

    p = run_cli("k8s-manifests", "--namespace", "neuron", "--doctor-args", "--skip aws")
    docs = list(yaml.safe_load_all(p.stdout))
    version = kubernetes_validate.latest_version()
    for d in docs:
        kubernetes_validate.validate(d, version, strict=True)
    assert [d["kind"] for d in docs] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                         "ConfigMap", "DaemonSet"]
    if shutil.which("shellcheck"):  # the plugin script NPD runs
        (tmp_path / "check.sh").write_text(docs[3]["data"]["neuron-env-check.sh"])
        sc = subprocess.run(["shellcheck", str(tmp_path / "check.sh")], capture_output=True,
                            text=True, timeout=60)
        assert sc.returncode == 0, sc.stdout
    listed = json.loads(run_cli("k8s-manifests", "--namespace", "neuron", "--doctor-args",
                                "--skip aws", "--format", "json").stdout)
    assert listed["kind"] == "List" and listed["items"] == docs
