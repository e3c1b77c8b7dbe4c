"""Fleet, pure parts: verdicts and reasons, the engine renderers (nhc, npd, prometheus), the
aggregation (drift, failing checks, unreachable, truncation), SSM request building, the JUnit
and Kubernetes outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from neuron_env.errors import UsageError
from neuron_env.fleet import aggregate as agg
from neuron_env.fleet import k8s, ssm
from neuron_env.fleet.sources import parse
from neuron_env.report import verdict
from neuron_env.report.model import Report, Result, exit_code
from neuron_env.report.render import render

SCHEMA = json.loads((Path(__file__).parents[2] / "neuron_env/schemas/fleet.schema.json")
                    .read_text())
IID = "i-0123456789abcdef0"


def report(*results: Result, torch="2.13.0", driver="2.30.2.0", iid=IID, strict=False) -> Report:
    target = {"instance": {"type": "trn2.48xlarge", "instance_id": iid},
              "packages": {"torch": torch, "torch-neuronx": "2.13.0.1"},
              "driver": {"module_version": driver,
                         "apt_packages": {"aws-neuronx-runtime-lib": "2.34.10.0"}}}
    results = results or (Result("os.release", "os", "pass", "Ubuntu 24.04"),)
    return Report("neuron-env.doctor/1", {"name": "neuron-env", "version": "0.1.0"},
                  {"release": "2.33"}, target, tuple(results), exit_code(results, strict),
                  extra={"strict": strict, "elapsed_s": 0.25})


FAIL = Result("os.release", "os", "fail", "Ubuntu 22.04.5 LTS: end-of-support\nsecond line")
FAIL2 = Result("driver.module", "driver", "fail", "neuron module not loaded")
WARN = Result("backend.origin", "backend", "warn", "foreign index")


def test_verdict_reason_and_versions():
    assert verdict.verdict(report().serialize()) == "pass"
    assert verdict.verdict(report(WARN).serialize()) == "warn"
    doc = report(FAIL, FAIL2).serialize()
    assert verdict.verdict(doc) == "fail"
    r = verdict.reason(doc)
    assert r == "neuron-env: os.release: Ubuntu 22.04.5 LTS: end-of-support second line (+1 more)"
    assert "\n" not in r and len(r) <= verdict.REASON_MAX
    long = Result("os.release", "os", "fail", "x" * 500)
    assert len(verdict.reason(report(long).serialize())) == verdict.REASON_MAX
    assert verdict.versions(doc) == {"torch": "2.13.0", "torch-neuronx": "2.13.0.1",
                                     "driver": "2.30.2.0", "runtime": "2.34.10.0"}
    # under --strict a warning is a problem too
    assert [p["id"] for p in verdict.problems(report(WARN, strict=True).serialize())] == \
        ["backend.origin"]


def test_nhc_and_npd_are_one_line():
    ok, bad = report(), report(FAIL, FAIL2)
    assert render(ok, "nhc") == "OK: neuron-env: ok (1 pass, 0 warn)\n"
    assert render(bad, "nhc").startswith("ERROR: neuron-env: os.release: Ubuntu 22.04.5")
    npd = render(bad, "npd")
    assert npd.count("\n") == 1 and len(npd.strip()) <= 80
    assert bad.exit_code == 1 and ok.exit_code == 0  # NPD: 0 OK, 1 problem


def test_prometheus_parses_and_follows_conventions():
    from prometheus_client.parser import text_string_to_metric_families

    text = render(report(FAIL, WARN, torch="2.14.0"), "prometheus")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    for name, fam in fams.items():
        assert re.fullmatch(r"neuron_env_[a-z_]+", name) and fam.type == "gauge"
        assert fam.documentation
    info = fams["neuron_env_info"].samples[0]
    assert info.labels["torch"] == "2.14.0" and info.labels["driver"] == "2.30.2.0"
    assert info.labels["torch_neuronx"] == "2.13.0.1" and info.value == 1
    states = {(s.labels["check"], s.labels["status"]): s.value
              for s in fams["neuron_env_check_status"].samples}
    assert states[("os.release", "fail")] == 1 and states[("os.release", "pass")] == 0
    assert states[("backend.origin", "warn")] == 1
    verdicts = {s.labels["verdict"]: s.value for s in fams["neuron_env_doctor_verdict"].samples}
    assert verdicts == {"pass": 0, "warn": 0, "fail": 1, "error": 0, "timeout": 0}
    assert fams["neuron_env_doctor_duration_seconds"].samples[0].value == 0.25


def test_prometheus_escapes_label_values():
    from prometheus_client.parser import text_string_to_metric_families

    odd = Result('x."q\\', "os", "pass", "s")
    text = render(report(odd), "prometheus")
    checks = [s.labels["check"] for f in text_string_to_metric_families(text)
              if f.name == "neuron_env_check_status" for s in f.samples]
    assert checks[0] == 'x."q\\'


def entries() -> list[agg.Entry]:
    out = [parse(json.dumps(report(iid=f"i-00000000000000{i:03d}").serialize()), "n", "f")
           for i in range(5)]
    out.append(parse(json.dumps(report(FAIL, iid="i-0000000000000f01", torch="2.14.0")
                                .serialize()), "n", "f"))
    out.append(parse(json.dumps(report(FAIL, FAIL2, iid="i-0000000000000f02",
                                       driver="2.29.0.0").serialize()), "n", "f"))
    out.append(agg.Entry("i-0000000000000u01", "ssm:c", unreachable="offline", detail="x"))
    out.append(agg.Entry("i-0000000000000t01", "ssm:c", exit_code=1, truncated=True,
                         unreadable="stdout truncated"))
    out.append(parse(b"{not json", "node-x", "f"))
    return out


def test_aggregate_counts_drift_failing_and_schema():
    body = agg.aggregate(entries(), {"engine": "files", "inputs": ["d"]})
    jsonschema.validate(body, SCHEMA)
    s = body["summary"]
    assert (s["instances"], s["pass"], s["fail"], s["unreachable"], s["unreadable"]) == \
        (10, 5, 3, 1, 1)  # the truncated one keeps its remote exit status: fail
    assert body["exit_code"] == 1
    assert [(f["id"], f["count"]) for f in body["failing_checks"]] == \
        [("os.release", 2), ("driver.module", 1)]
    drifting = {d["component"]: d for d in body["drift"]["drifting"]}
    assert set(drifting) == {"torch", "driver"}
    assert drifting["torch"]["majority"] == "2.13.0"
    assert drifting["torch"]["instances"] == ["i-0000000000000f01"]
    assert body["drift"]["versions"]["driver"] == {"2.30.2.0": 6, "2.29.0.0": 1}
    assert body["unreachable"] == [{"id": "i-0000000000000u01", "reason": "offline",
                                    "detail": "x"}]
    assert body["truncated"] == ["i-0000000000000t01"]
    assert "not JSON" in body["instances"][-1]["reason"]


def test_all_passing_fleet_exits_0_and_junit_parses(tmp_path):
    from junitparser import Error, Failure, JUnitXml

    ok = agg.aggregate(entries()[:5], {"engine": "files"})
    assert ok["exit_code"] == 0 and not ok["drift"]["drifting"]
    from neuron_env.commands.fleet import FleetDocument
    from neuron_env.fleet import views

    body = agg.aggregate(entries(), {"engine": "files"})
    (tmp_path / "f.xml").write_text(render(FleetDocument(body, views.text), "junit"))
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "f.xml"))))
    cases = {c.name: c for c in suite}
    assert len(cases) == 10 and suite.failures == 3 and suite.errors == 2
    assert isinstance(cases["i-0000000000000f02"].result[0], Failure)
    assert isinstance(cases["i-0000000000000u01"].result[0], Error)
    assert cases["i-00000000000000000"].is_passed


def test_parse_rejects_other_documents():
    e = parse(json.dumps({"schema": "neuron-env.smoke/1"}), "n", "s")
    assert e.doc is None and "not a doctor report" in e.unreadable


def test_ssm_targets_rates_and_request():
    assert ssm.parse_targets("tag:cluster=trn2")[0] == {
        "Targets": [{"Key": "tag:cluster", "Values": ["trn2"]}]}
    assert ssm.parse_targets(f"{IID}, i-0aaaaaaaaaaaaaaa1")[0] == {
        "InstanceIds": [IID, "i-0aaaaaaaaaaaaaaa1"]}
    for bad in ("tag:cluster", "tag:=x", "web-1", "", ",".join([IID] * 51)):
        with pytest.raises(UsageError):
            ssm.parse_targets(bad)
    for bad in ("x", "101%", "-1", "5 %", ""):
        with pytest.raises(UsageError):
            ssm.check_rate("--max-errors", bad)
    with pytest.raises(UsageError):
        ssm.check_rate("--max-concurrency", "0")
    assert ssm.check_rate("--max-errors", "0") == "0"
    o = ssm.FleetOptions(targets="tag:a=b", max_concurrency="10%", max_errors="3",
                         s3_bucket="b", s3_prefix="/p/", timeout=300,
                         doctor_args=["--strict", "--only", "os, driver"])
    kw = ssm.send_args(o, ssm.parse_targets(o.targets)[0])
    assert kw["Parameters"]["commands"] == [
        "neuron-env doctor --format json --strict --only 'os, driver'"]
    assert (kw["MaxConcurrency"], kw["MaxErrors"], kw["OutputS3KeyPrefix"]) == ("10%", "3", "p")
    assert ssm.stdout_key("/p/", "cmd", IID) == \
        f"p/cmd/{IID}/awsrunShellScript/0.awsrunShellScript/stdout"
    assert ssm.stdout_key("", "cmd", IID).startswith("cmd/")
    with pytest.raises(UsageError):
        ssm.send_args(ssm.FleetOptions(targets="tag:a=b", timeout=5), {})
    with pytest.raises(UsageError):
        ssm.send_args(ssm.FleetOptions(targets="tag:a=b", doctor_args=["--format=text"]), {})


def test_k8s_manifests_validate_against_kubernetes_schemas():
    import kubernetes_validate

    docs = k8s.manifests(doctor_args=["--skip", "aws"])
    version = kubernetes_validate.latest_version()
    for d in docs:
        kubernetes_validate.validate(d, version, strict=True)
    assert yaml.safe_load_all(k8s.to_yaml(docs)) and list(
        yaml.safe_load_all(k8s.to_yaml(docs))) == docs
    ds = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    term = ds["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == \
        "neuron.amazonaws.com/present"
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in \
        ds["tolerations"]
    cm = next(d for d in docs if d["kind"] == "ConfigMap")["data"]
    cfg = json.loads(cm["neuron-env-monitor.json"])
    assert cfg["plugin"] == "custom" and cfg["rules"][0]["path"] == "/config/neuron-env-check.sh"
    assert f"doctor --format npd --only {k8s.NODE_CHECKS} --skip aws" in cm["neuron-env-check.sh"]
    with pytest.raises(UsageError):
        k8s.manifests(neuron_env="neuron-env")


def test_poll_backs_off_until_the_command_ends(monkeypatch):
    class FakeSSM:  # the ListCommands answers of a command that takes three polls
        def __init__(self, *answers: str) -> None:
            self.answers = list(answers)

        def list_commands(self, CommandId):
            return {"Commands": [{"CommandId": CommandId, "Status": self.answers.pop(0)}]}

    slept: list[float] = []
    monkeypatch.setattr(ssm.time, "sleep", slept.append)
    three = FakeSSM("Pending", "InProgress", "InProgress", "Success")
    assert ssm.poll(three, "c1", deadline=ssm.time.monotonic() + 60,
                    poll_max=1.5)["Status"] == "Success"
    assert slept == [0.5, 1.0, 1.5]
    slept.clear()
    assert ssm.poll(FakeSSM(*["InProgress"] * 5), "c2", deadline=ssm.time.monotonic() + 1.6,
                    poll_max=10)["Status"] == "InProgress"  # the deadline ends it
    assert slept == [0.5, 1.0]


def test_sources_read_a_directory_and_say_what_is_wrong(tmp_path):
    from neuron_env.errors import ConfigurationError
    from neuron_env.fleet.sources import from_args

    (tmp_path / "a.json").write_text(json.dumps(report().serialize()))
    (tmp_path / "b.json").write_text(json.dumps(report(FAIL).serialize()))  # same instance id
    (tmp_path / "notes.txt").write_text("ignored")
    got = from_args([str(tmp_path)])
    assert [e.id for e in got] == [IID, IID] and got[1].doc["exit_code"] == 1
    # one id in two files: each row names its file (#48 item 15: `#2`, `#3` said which?)
    body = agg.aggregate(got, {"engine": "files"})
    assert [r["id"] for r in body["instances"]] == [f"{IID} (a.json)", f"{IID} (b.json)"]
    with pytest.raises(ConfigurationError, match="no such file"):
        from_args([str(tmp_path / "missing")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigurationError, match=r"no \*\.json reports"):
        from_args([str(tmp_path / "empty")])
    with pytest.raises(ConfigurationError, match="no reports given"):
        from_args([])


def test_fleet_text_view_shows_what_needs_attention():
    from neuron_env.fleet import views

    body = agg.aggregate(entries(), {"engine": "ssm", "command_id": "cmd-1"})
    text = views.text(body)
    assert text.startswith("fleet: 10 instances (5 pass, 3 fail, 1 unreachable, 1 unreadable)"
                           "  [SSM command cmd-1]")
    assert "i-0000000000000u01" in text and "i-00000000000000000" not in text  # passing: counted
    assert "drift: torch: 2.13.0 ×6, 2.14.0 ×1" in text and text.endswith("verdict: FAIL\n")
    assert "1 report(s) truncated at 24,000 characters" in text


def test_a_huge_file_among_the_reports_is_unreadable_not_loaded(tmp_path):
    from neuron_env.fleet.sources import MAX_REPORT, from_args

    (tmp_path / "a.json").write_text(json.dumps(report().serialize()))
    with open(tmp_path / "z.json", "wb") as f:  # sparse: no disk used
        f.truncate(MAX_REPORT + 1)
    got = {e.source.rsplit("/", 1)[-1]: e for e in from_args([str(tmp_path)])}
    assert got["a.json"].doc is not None
    assert got["z.json"].doc is None and "is larger than" in got["z.json"].unreadable
