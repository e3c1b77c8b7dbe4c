"""`fleet doctor` through boto3 against moto's server on loopback. moto runs no agent, so a
fixture plays the SSM agent inside moto: after SendCommand it writes each instance's stdout
(the invocation's StandardOutputContent, or the S3 object at the agent's key layout) or marks
the instance offline / unmanaged / timed out. Throttling comes from a loopback proxy; access
denied from moto's IAM."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.helpers import roots
from tests.helpers.aws import ACCOUNT, aws_env, boto, moto_process
from tests.helpers.cli import REPO, run_cli
from tests.helpers.throttle import ThrottlingProxy

pytestmark = pytest.mark.integration
SCHEMA = json.loads((REPO / "neuron_env/schemas/fleet.schema.json").read_text())
TAG = "tag:cluster=trn2-train"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Two real doctor reports (a passing and a failing host) to hand out as agent output."""
    base = tmp_path_factory.mktemp("roots")
    out = {}
    for name, kw in (("pass", {}), ("fail", {"os": "debian-12"})):
        p = run_cli("doctor", "--root", str(roots.trn2_host(base / name, **kw)), "--only",
                    "os,instance,driver", "--format", "json")
        out[name] = json.loads(p.stdout)
    return out


def as_instance(doc: dict, iid: str, pad: int = 0) -> str:
    d = json.loads(json.dumps(doc))
    d["target"]["instance"]["instance_id"] = iid
    if pad:
        d["padding"] = "x" * pad
    return json.dumps(d, indent=2)


def launch(url: str, n: int, tag: str = "trn2-train") -> list[str]:
    ec2 = boto("ec2", url)
    ami = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    resp = ec2.run_instances(ImageId=ami, MinCount=n, MaxCount=n, InstanceType="trn2.48xlarge",
                             TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                 {"Key": "cluster", "Value": tag}]}])
    return sorted(i["InstanceId"] for i in resp["Instances"])


@pytest.fixture
def agent(monkeypatch):
    """plan: instance id -> ("report", stdout, exit) | "offline" | "unmanaged" | "timeout"
    | "undeliverable"; `sent` records every SendCommand's arguments as moto got them."""
    from moto.s3.models import s3_backends
    from moto.ssm.models import SimpleSystemManagerBackend

    plan: dict = {}
    sent: list = []
    real = SimpleSystemManagerBackend.send_command

    def send_command(self, **kw):
        cmd = real(self, **kw)
        sent.append(kw)
        for inv in list(cmd.invocations):
            what = plan.get(inv["InstanceId"], "unmanaged")
            if what == "unmanaged":
                cmd.invocations.remove(inv)
            elif what in ("offline", "timeout", "undeliverable"):
                inv["Status"], inv["StatusDetails"] = {
                    "offline": ("TimedOut", "DeliveryTimedOut"),
                    "timeout": ("TimedOut", "ExecutionTimedOut"),
                    "undeliverable": ("Failed", "Undeliverable")}[what]
            else:
                _, stdout, code = what
                inv["ResponseCode"] = code
                inv["Status"] = inv["StatusDetails"] = "Success" if code == 0 else "Failed"
                if kw.get("output_s3_bucket_name"):
                    from neuron_env.fleet.ssm import stdout_key

                    key = stdout_key(kw.get("output_s3_key_prefix") or "", cmd.command_id,
                                     inv["InstanceId"])
                    s3_backends[ACCOUNT]["aws"].put_object(
                        kw["output_s3_bucket_name"], key, stdout.encode())
                    inv["StandardOutputContent"] = stdout[:2500]
                else:
                    inv["StandardOutputContent"] = stdout[:24000]
        return cmd

    monkeypatch.setattr(SimpleSystemManagerBackend, "send_command", send_command)
    return plan, sent


def fleet(url, *args):
    p = run_cli("fleet", "doctor", *args, "--format", "json", env=aws_env(url), timeout=120)
    try:
        return json.loads(p.stdout), p
    except ValueError:
        raise AssertionError(p.stdout + p.stderr) from None


def test_tag_targets_s3_reports_and_controls(moto_url, agent, reports):
    plan, sent = agent
    ids = launch(moto_url, 4)
    plan[ids[0]] = ("report", as_instance(reports["pass"], ids[0]), 0)
    plan[ids[1]] = ("report", as_instance(reports["fail"], ids[1]), 1)
    plan[ids[2]] = "offline"  # ids[3]: no plan: not managed
    boto("s3", moto_url).create_bucket(Bucket="fleet-out")
    body, p = fleet(moto_url, "--targets", TAG, "--max-concurrency", "25%", "--max-errors",
                    "2", "--s3-bucket", "fleet-out", "--s3-prefix", "runs/a", "--timeout",
                    "120", "--doctor-args", "--only os,instance --strict")
    jsonschema.validate(body, SCHEMA)
    assert p.returncode == 1, p.stderr
    kw = sent[-1]
    assert kw["targets"] == [{"Key": "tag:cluster", "Values": ["trn2-train"]}]
    assert (kw["max_concurrency"], kw["max_errors"]) == ("25%", "2")
    assert kw["document_name"] == "AWS-RunShellScript"
    assert kw["output_s3_bucket_name"] == "fleet-out"
    assert kw["output_s3_key_prefix"] == "runs/a"
    assert kw["parameters"]["commands"] == [
        "neuron-env doctor --format json --only os,instance --strict"]
    assert kw["parameters"]["executionTimeout"] == ["120"]
    by = {r["id"]: r for r in body["instances"]}
    assert by[ids[0]]["verdict"] == "pass" and by[ids[0]]["source"].startswith(
        f"s3://fleet-out/runs/a/{body['source']['command_id']}/{ids[0]}/awsrunShellScript/")
    assert by[ids[1]]["verdict"] == "fail"
    assert by[ids[1]]["failing"][0]["id"] == "os.release"
    assert by[ids[2]]["unreachable"]["reason"] == "offline"
    assert by[ids[3]]["unreachable"]["reason"] == "not-managed"
    assert body["failing_checks"][0]["id"] == "os.release"


def test_without_s3_truncation_is_detected_and_said(moto_url, agent, reports):
    plan, _ = agent
    ids = launch(moto_url, 3, tag="small")
    plan[ids[0]] = ("report", as_instance(reports["pass"], ids[0]), 0)
    plan[ids[1]] = ("report", as_instance(reports["fail"], ids[1], pad=40000), 1)
    plan[ids[2]] = "timeout"
    body, p = fleet(moto_url, "--targets", ",".join(ids))
    assert p.returncode == 1 and "instances" in body, body
    jsonschema.validate(body, SCHEMA)
    by = {r["id"]: r for r in body["instances"]}
    assert by[ids[0]]["verdict"] == "pass"
    assert by[ids[1]]["truncated"] and by[ids[1]]["verdict"] == "fail"  # from ResponseCode
    assert "24,000" in by[ids[1]]["reason"] and "--s3-bucket" in by[ids[1]]["reason"]
    assert body["truncated"] == [ids[1]]
    assert by[ids[2]]["unreachable"]["reason"] == "timed-out"
    text = run_cli("fleet", "doctor", "--targets", ",".join(ids),
                   env=aws_env(moto_url), timeout=120).stdout
    assert "truncated at 24,000 characters" in text


def test_throttling_is_retried(moto_url, agent, reports):
    plan, _ = agent
    ids = launch(moto_url, 2, tag="throttled")
    for i in ids:
        plan[i] = ("report", as_instance(reports["pass"], i), 0)
    throttle = {"SendCommand": 1, "ListCommands": 1, "GetCommandInvocation": 2}
    with ThrottlingProxy(moto_url, throttle) as proxy:
        body, p = fleet(proxy.url, "--targets", "tag:cluster=throttled")
    assert p.returncode == 0, p.stdout
    assert body["summary"]["pass"] == 2
    assert dict(proxy.throttled) == throttle
    assert proxy.seen["SendCommand"] == 2  # throttled once, then the one that went through


def test_bad_flags_are_usage_errors(moto_url):
    for args in (["--targets", "web-1"], ["--targets", TAG, "--max-errors", "x"],
                 ["--targets", TAG, "--timeout", "5"]):
        body, p = fleet(moto_url, *args)
        assert p.returncode == 2 and body["error"]["code"] == "usage", args
        jsonschema.validate(body, SCHEMA)


def test_no_instance_with_the_tag(moto_url):
    body, p = fleet(moto_url, "--targets", "tag:cluster=nothing-here")
    assert p.returncode == 2 and "no pending or running instance" in body["error"]["message"]


# -- access denied: a moto server that checks IAM ---------------------------------------------
POLICIES = {
    "no-s3": ["ec2:DescribeInstances", "ssm:SendCommand", "ssm:ListCommands",
              "ssm:GetCommandInvocation"],
    "no-ssm": ["ec2:DescribeInstances"],
}


@pytest.fixture(scope="module")
def iam_moto():
    """moto with IAM checks on, after a setup phase without (users, bucket, instances)."""
    setup_calls = 2 + 3 * len(POLICIES) + 2  # images, run, users, bucket
    with moto_process(setup_calls) as url:
        ids = launch(url, 2, tag="locked")
        iam, keys = boto("iam", url), {}
        for user, actions in POLICIES.items():
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName="p", PolicyDocument=json.dumps({
                "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*",
                                                        "Action": actions}]}))
            k = iam.create_access_key(UserName=user)["AccessKey"]
            keys[user] = (k["AccessKeyId"], k["SecretAccessKey"])
        boto("s3", url).create_bucket(Bucket="locked-out")
        yield url, keys, ids


def locked(url, keys, user, *args):
    key, secret = keys[user]
    env = aws_env(url, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
    p = run_cli("fleet", "doctor", "--targets", "tag:cluster=locked", *args, "--format", "json",
                env=env, timeout=120)
    return json.loads(p.stdout), p


def test_access_denied_reading_s3_marks_instances(iam_moto):
    url, keys, ids = iam_moto
    body, p = locked(url, keys, "no-s3", "--s3-bucket", "locked-out")
    jsonschema.validate(body, SCHEMA)
    assert p.returncode == 1
    assert [u["reason"] for u in body["unreachable"]] == ["access-denied"] * 2
    assert sorted(u["id"] for u in body["unreachable"]) == ids


def test_access_denied_sending_is_a_clear_error(iam_moto):
    url, keys, _ = iam_moto
    body, p = locked(url, keys, "no-ssm")
    assert p.returncode == 2, p.stdout
    assert "SendCommand" in body["error"]["message"]
    assert "ssm:SendCommand" in body["error"]["hint"]
    assert keys["no-ssm"][1] not in p.stdout + p.stderr
