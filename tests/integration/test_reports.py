"""Reports that are always there and right: every --report path on every exit, JUnit marks,
markdown, --list-checks, waivers, --fix without a TTY."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from tests.helpers import roots
from tests.helpers.cli import REPO, run_cli

pytestmark = pytest.mark.integration
SCHEMAS = REPO / "neuron_env/schemas"
DOCTOR = json.loads((SCHEMAS / "doctor.schema.json").read_text())


def _reports(tmp_path):
    paths = {f: tmp_path / "out" / f"doctor.{f}" for f in ("json", "junit", "markdown")}
    return paths, [a for f, p in paths.items() for a in ("--report", f"{f}:{p}")]


@pytest.mark.parametrize("bad", [["--matrix", "no-such-release"], ["--only", "nope"],
                                 ["--root", "/no/such/dir"]])
def test_exit_2_still_writes_every_report_and_junit_on_stdout(tmp_path, bad):
    paths, args = _reports(tmp_path)
    p = run_cli("doctor", "--format", "junit", *bad, *args)
    assert p.returncode == 2, p.stderr
    suite = ET.fromstring(p.stdout).find("testsuite")
    assert suite.get("errors") == "1" and suite.find("testcase/error") is not None
    doc = json.loads(paths["json"].read_text())
    jsonschema.validate(doc, DOCTOR)
    assert doc["exit_code"] == 2 and doc["error"]["message"]
    assert ET.parse(paths["junit"]).getroot().find("testsuite/testcase/error") is not None
    assert "exit 2" in paths["markdown"].read_text()


def test_missing_interpreter_is_a_failing_python_version_result(tmp_path):
    paths, args = _reports(tmp_path)
    root = roots.trn2_host(tmp_path / "r")
    p = run_cli("doctor", "--root", str(root), "--python", str(tmp_path / "nope"), "--format",
                "json", *args)
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, DOCTOR)
    r = {x["id"]: x for x in doc["results"]}["python.version"]
    assert r["status"] == "fail" and "does not exist" in r["summary"]
    assert all(isinstance(x.get("duration_s"), float) for x in doc["results"])
    assert json.loads(paths["json"].read_text())["exit_code"] == 1


def test_junit_marks_warnings_strict_fails_them_and_times_everything(tmp_path):
    root = roots.trn2_host(tmp_path / "r", packages={})  # dpkg without Neuron: a warning
    base = ["doctor", "--root", str(root), "--python", str(tmp_path / "nope"), "--format",
            "junit"]
    for strict in (False, True):
        p = run_cli(*base, *(["--strict"] if strict else []))
        suite = ET.fromstring(p.stdout).find("testsuite")
        assert float(suite.get("time")) >= 0
        cases = {c.get("name"): c for c in suite.iter("testcase")}
        assert all(c.get("time") is not None for c in cases.values())
        warn = cases["driver.packages [WARN]"]
        assert warn.find("properties/property").get("value") == "warn"
        if strict:  # python.version fails too: the warning must still be a failure
            assert "--strict" in warn.find("failure").get("message")
        else:
            assert warn.find("failure") is None
            assert warn.find("system-out").text.startswith("WARNING:")


def test_markdown_has_the_table_and_pasteable_fixes(tmp_path):
    root = roots.trn2_host(tmp_path / "r", driver=None, packages={})
    p = run_cli("doctor", "--root", str(root), "--python", str(tmp_path / "nope"), "--format",
                "markdown")
    assert p.returncode == 1
    assert "| ❌ | `driver.module` |" in p.stdout and "## Problems" in p.stdout
    assert "```sh\nsudo install -d -m 0755 /etc/apt/keyrings && curl" in p.stdout


def test_list_checks_text_and_json():
    p = run_cli("doctor", "--list-checks", "--format", "json")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "checks.schema.json").read_text()))
    ids = {c["id"] for c in doc["checks"]}
    assert {"python.version", "driver.module", "smoke.device", "instance.aws"} <= ids
    assert all(c["about"] for c in doc["checks"])
    assert "driver.module" in run_cli("doctor", "--list-checks").stdout


def test_waivers_are_recorded_and_expire_loudly(tmp_path):
    root = roots.trn2_host(tmp_path / "r", packages={})
    base = ["doctor", "--root", str(root), "--python", str(tmp_path / "nope"), "--format",
            "json", "--only", "driver.packages"]
    doc = json.loads(run_cli(*base, "--waive", "driver.packages", "--reason", "AMI team pins",
                             "--until", "2999-01-01").stdout)
    jsonschema.validate(doc, DOCTOR)
    r = doc["results"][0]
    assert r["status"] == "skip" and r["waiver"]["status"] == "warn" and "WAIVED" in r["summary"]
    assert doc["waivers"][0]["applied_to"] == ["driver.packages"]
    (tmp_path / "w.toml").write_text('[[waiver]]\nid = "driver"\nreason = "old"\n'
                                     "until = 2020-01-01\n")
    doc = json.loads(run_cli(*base, "--waivers", str(tmp_path / "w.toml")).stdout)
    r = doc["results"][0]
    assert r["status"] == "warn" and "WAIVER EXPIRED on 2020-01-01" in r["summary"]
    assert doc["waivers"][0]["expired"] is True
    p = run_cli(*base, "--waive", "driver.packages")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["message"].startswith(
        "every --waive needs a --reason")


def test_fix_without_a_tty_or_yes_runs_nothing_and_says_so(tmp_path):
    root = roots.trn2_host(tmp_path / "r")
    p = run_cli("doctor", "--root", str(root), "--python", str(tmp_path / "nope"), "--fix",
                "--format", "json", "--only", "python")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, DOCTOR)
    assert p.returncode == 1 and all(not f["ran"] for f in doc["fixes"])
    if any(f["command"].startswith("neuron-env install") for f in doc["fixes"]):
        assert "pass --yes" in p.stderr


def test_instance_unknown_family_is_exit_2_and_json_meets_its_schema():
    schema = json.loads((SCHEMAS / "instance.schema.json").read_text())
    p = run_cli("instance", "trn9.foo", "--format", "json")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, schema)
    assert p.returncode == 2 and "trn9" in doc["error"]["message"]
    p = run_cli("instance", "trn1.32xlarge", "--format", "json")
    jsonschema.validate(json.loads(p.stdout), schema)
    assert p.returncode == 0  # known, unsupported: a fact, not an error


def test_bundle_lists_then_writes_a_masked_archive(tmp_path):
    import tarfile

    from tests.helpers.envs import make_venv

    base_venv = make_venv(tmp_path / "v")
    prefix = base_venv.parent.parent
    logs = prefix / ".neuron-env" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "install-1.log").write_text("index https://alice:s3cret@mirror.example/simple\n")
    out = tmp_path / "case.tar.gz"
    root = roots.trn2_host(tmp_path / "r")
    args = ["bundle", "--out", str(out), "--python", str(base_venv), "--root", str(root)]
    p = run_cli(*args, "--list", "--format", "json")
    assert p.returncode == 0 and not out.exists() and "neuron-env/install-1.log" in p.stderr
    p = run_cli(*args, "--format", "json")
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "bundle.schema.json").read_text()))
    with tarfile.open(out) as tar:
        names = {n.split("/", 1)[1]: n for n in tar.getnames()}
        assert {"doctor.json", "doctor.md", "packages-target.txt", "neuron-ls.json",
                "dmesg-neuron.txt", "neuron-env/install-1.log"} <= set(names)
        log = tar.extractfile(names["neuron-env/install-1.log"]).read().decode()
    assert "s3cret" not in log and "***@mirror.example" in log
    assert [m["name"] for m in doc["members"]] == list(names)


def test_cli_help_is_short_has_examples_choices_and_completion():
    top = run_cli("-h", env=None).stdout
    assert "--install-completion" in top and "--show-completion" in top
    for line in top.split("Check, install, run:")[1].splitlines():  # the command panels
        assert "..." not in line, line  # first help lines short enough not to be cut
    for cmd in ("doctor", "install", "smoke", "instance", "bundle"):
        h = run_cli(cmd, "-h").stdout
        assert "Examples:\n    neuron-env " + cmd in h, cmd
    assert "--backend [neuron|emulated]" in run_cli("install", "-h").stdout.replace("<", "[") \
        .replace(">", "]")
    p = run_cli("smoke", "--dtype", "float64")
    assert p.returncode == 2 and "float32" in p.stderr and "Traceback" not in p.stderr


def test_image_pipelines_retry_network_steps_and_keep_the_junit_report():
    import re
    import subprocess

    import yaml

    doc = yaml.safe_load((REPO / "scripts/imagebuilder/neuron-env.yaml").read_text())
    build = {s["name"]: s for p in doc["phases"] if p["name"] == "build" for s in p["steps"]}
    assert all(s.get("maxAttempts", 1) >= 2 for s in build.values()), build
    hcl = (REPO / "scripts/packer/neuron-env.pkr.hcl").read_text()
    assert re.search(r'required_version\s*=\s*">= 1\.\d+', hcl)
    keep, fetch, fail = (hcl.index("|| rc=$?"), hcl.index("doctor-validate.xml\"\n  }"),
                         hcl.index("exit \\\"$rc\\\""))
    assert keep < fetch < fail  # the report comes down before a failed validation ends it
    for line in re.findall(r'^\s+"(.*)",$', hcl, re.M):
        shell = line.replace('\\"', '"').replace("${var.target_instance_type}", "trn2.48xlarge")
        if "{{" not in shell:
            assert subprocess.run(["bash", "-n", "-c", shell]).returncode == 0, shell
