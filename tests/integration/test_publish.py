"""doctor --tag-instance / --publish-ssm and `instance --aws/--dlami`, through boto3 against
moto's server on loopback: success, missing credentials, access denied, --strict-publish."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.helpers import roots
from tests.helpers.aws import aws_env, boto, seed_public_parameter
from tests.helpers.cli import REPO, run_cli
from tests.helpers.servers import IMDS

pytestmark = pytest.mark.integration

SUMMARY_SCHEMA = json.loads((REPO / "neuron_env/schemas/summary.schema.json").read_text())
INSTANCE_SCHEMA = json.loads((REPO / "neuron_env/schemas/instance.schema.json").read_text())
IID = "i-0123456789abcdef0"


def doctor(root, env, *extra):
    p = run_cli("doctor", "--root", str(root), "--only", "instance,os", "--format", "json",
                *extra, env=env)
    doc = json.loads(p.stdout)
    return doc, {r["id"]: r for r in doc["results"]}, p


def tags_of(url, iid):
    resp = boto("ec2", url).describe_tags(Filters=[{"Name": "resource-id", "Values": [iid]}])
    return {t["Key"]: t["Value"] for t in resp["Tags"]}


def test_tags_and_ssm_summary_written(tmp_path, moto_url):
    doc, res, p = doctor(roots.trn2_host(tmp_path / "r"), aws_env(moto_url), "--tag-instance",
                         "--publish-ssm", "/neuron-env/pass")
    assert p.returncode == 0, p.stdout
    assert res["aws.tags"]["status"] == "pass" and res["aws.ssm"]["status"] == "pass"
    tags = tags_of(moto_url, IID)
    assert tags["neuron-env:status"] == "pass"
    assert tags["neuron-env:version"] == doc["tool"]["version"]
    assert tags["neuron-env:matrix"] == doc["matrix"]["release"]
    value = boto("ssm", moto_url).get_parameter(Name="/neuron-env/pass")["Parameter"]["Value"]
    summary = json.loads(value)
    jsonschema.validate(summary, SUMMARY_SCHEMA)
    assert summary["status"] == "pass" and summary["instance_id"] == IID
    assert summary["instance"] == "trn2.48xlarge"
    # a second run overwrites (a new version), never fails on an existing parameter
    _, res, _ = doctor(roots.trn2_host(tmp_path / "r2"), aws_env(moto_url),
                       "--publish-ssm", "/neuron-env/pass")
    assert "(version 2)" in res["aws.ssm"]["summary"]


def test_failing_checks_are_published_and_keep_exit_1(tmp_path, moto_url):
    iid = "i-0aaaaaaaaaaaaaaa1"
    root = roots.trn2_host(tmp_path / "r", os="debian-12")  # an unsupported OS fails
    (root / "sys/devices/virtual/dmi/id/board_asset_tag").write_text(iid + "\n")
    _, res, p = doctor(root, aws_env(moto_url), "--tag-instance", "--publish-ssm",
                       "/neuron-env/fail")
    assert p.returncode == 1 and res["os.release"]["status"] == "fail"
    assert res["aws.tags"]["status"] == "pass"
    assert tags_of(moto_url, iid)["neuron-env:status"] == "fail"
    summary = json.loads(boto("ssm", moto_url).get_parameter(
        Name="/neuron-env/fail")["Parameter"]["Value"])
    jsonschema.validate(summary, SUMMARY_SCHEMA)
    assert summary["status"] == "fail" and summary["exit_code"] == 1
    assert [x["id"] for x in summary["problems"]][:1] == ["os.release"]


def test_instance_id_from_imds_when_dmi_has_none(tmp_path, moto_url):
    iid = "i-0bbbbbbbbbbbbbbb2"
    root = roots.trn2_host(tmp_path / "r")
    (root / "sys/devices/virtual/dmi/id/board_asset_tag").unlink()
    with IMDS(instance_id=iid) as imds:
        env = aws_env(moto_url, AWS_EC2_METADATA_DISABLED=None,
                      AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url)
        _, res, _ = doctor(root, env, "--tag-instance")
    assert res["aws.tags"]["status"] == "pass", res["aws.tags"]
    assert tags_of(moto_url, iid)["neuron-env:status"] == "pass"


def test_unknown_instance_id_warns_and_strict_fails(tmp_path, moto_url):
    root = roots.trn2_host(tmp_path / "r")
    (root / "sys/devices/virtual/dmi/id/board_asset_tag").unlink()
    _, res, p = doctor(root, aws_env(moto_url), "--tag-instance")
    assert p.returncode == 0
    assert res["aws.tags"]["status"] == "warn"
    assert "instance id unknown" in res["aws.tags"]["summary"]
    assert "IMDS disabled" in res["aws.tags"]["summary"]
    _, res, p = doctor(root, aws_env(moto_url), "--tag-instance", "--strict-publish")
    assert p.returncode == 1 and res["aws.tags"]["status"] == "fail"


def _no_creds(url):
    env = aws_env(url)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(k)
    return env


def test_missing_credentials_is_a_warning_not_a_failure(tmp_path, moto_url):
    root = roots.trn2_host(tmp_path / "r")
    doc, res, p = doctor(root, _no_creds(moto_url), "--tag-instance", "--publish-ssm",
                         "/neuron-env/nocreds")
    assert p.returncode == 0, p.stdout
    for rid in ("aws.tags", "aws.ssm"):
        assert res[rid]["status"] == "warn" and "no AWS credentials" in res[rid]["summary"]
        assert "instance profile" in res[rid]["fix"]
    assert doc["summary"]["fail"] == 0
    assert "Traceback" not in p.stderr
    text = run_cli("doctor", "--root", str(root), "--only", "instance", "--tag-instance",
                   env=_no_creds(moto_url))
    assert text.returncode == 0 and "tags not written: CreateTags" in text.stdout


def test_strict_publish_turns_a_publish_failure_into_exit_1(tmp_path, moto_url):
    _, res, p = doctor(roots.trn2_host(tmp_path / "r"), _no_creds(moto_url),
                       "--publish-ssm", "/neuron-env/strict", "--strict-publish")
    assert p.returncode == 1 and res["aws.ssm"]["status"] == "fail"
    assert all(r["status"] != "fail" for k, r in res.items() if not k.startswith("aws."))


def test_access_denied_is_a_warning_with_the_permission_to_grant(tmp_path, moto_auth):
    url, key, secret = moto_auth
    env = aws_env(url, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
    _, res, p = doctor(roots.trn2_host(tmp_path / "r"), env, "--tag-instance",
                       "--publish-ssm", "/neuron-env/denied")
    assert p.returncode == 0, p.stdout
    tags, ssm = res["aws.tags"], res["aws.ssm"]
    assert tags["status"] == "warn", tags
    assert "UnauthorizedOperation" in tags["summary"] or "AccessDenied" in tags["summary"], tags
    assert "ec2:CreateTags" in tags["fix"]
    assert ssm["status"] == "warn" and "AccessDenied" in ssm["summary"], ssm
    assert "ssm:PutParameter" in ssm["fix"]
    # the same user may describe instance types: a permission problem is per call
    p = run_cli("instance", "trn2.48xlarge", "--aws", "--format", "json", env=env)
    assert json.loads(p.stdout)["aws"]["devices"] == 16
    _, res, p = doctor(roots.trn2_host(tmp_path / "r2"), env, "--tag-instance",
                       "--strict-publish")
    assert p.returncode == 1 and res["aws.tags"]["status"] == "fail"


def test_instance_aws_and_dlami(moto_url):
    param = "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"
    seed_public_parameter(param, "ami-0123456789abcdef0")
    p = run_cli("instance", "trn2.48xlarge", "--aws", "--dlami", "ubuntu-24.04",
                "--format", "json", env=aws_env(moto_url))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, INSTANCE_SCHEMA)
    assert doc["matrix_facts"]["devices"] == 16
    assert doc["aws"]["devices"] == 16 and doc["aws"]["cores_per_device"] == 8
    assert doc["dlami"] == {"os": "ubuntu-24.04", "parameter": param,
                            "image_id": "ami-0123456789abcdef0"}
    text = run_cli("instance", "trn2.48xlarge", "--aws", "--dlami", "ubuntu-24.04",
                   env=aws_env(moto_url)).stdout
    assert "ami-0123456789abcdef0" in text and "EC2:" in text


def test_instance_dlami_missing_and_no_credentials_warn(moto_url):
    p = run_cli("instance", "trn2.48xlarge", "--dlami", "ubuntu-26.04", "--format", "json",
                env=aws_env(moto_url))
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["dlami"]["image_id"] is None
    assert any("ParameterNotFound" in w for w in doc["warnings"])
    p = run_cli("instance", "trn2.48xlarge", "--aws", "--format", "json",
                env=_no_creds(moto_url))
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, INSTANCE_SCHEMA)
    assert doc["aws"] is None and any("no AWS credentials" in w for w in doc["warnings"])


def test_instance_without_aws_never_imports_boto3(tmp_path):
    code = ("import sys; from neuron_env.commands import instance as i; "
            "d = i.run('trn2.48xlarge', None, False, None); "
            "assert 'boto3' not in sys.modules, 'boto3 imported'; print(d['matrix_facts'])")
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, cwd=REPO)
    assert p.returncode == 0, p.stderr
