"""doctor --aws through boto3 against moto's server on loopback."""

from __future__ import annotations

import json

import pytest

from tests.helpers import roots
from tests.helpers.aws import aws_env, free_port
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.integration


def doctor_aws(root, env):
    p = run_cli("doctor", "--root", str(root), "--aws", "--only", "instance",
                "--format", "json", env=env)
    doc = json.loads(p.stdout)
    return {r["id"]: r for r in doc["results"]}["instance.aws"], p


def test_aws_neuron_info_matches(tmp_path, moto_url):
    root = roots.trn2_host(tmp_path / "r")
    r, p = doctor_aws(root, aws_env(moto_url))
    assert r["observed"]["devices"] == 16 and r["observed"]["cores_per_device"] == 8
    # moto's memory figure (512 GiB/device) disagrees with AWS docs: a warning, never a failure
    assert r["status"] == "warn" and "memory" in r["summary"] and p.returncode == 0


def test_aws_device_count_mismatch_fails(tmp_path, moto_url):
    root = roots.trn2_host(tmp_path / "r", devices=4)
    r, _ = doctor_aws(root, aws_env(moto_url))
    assert r["status"] == "fail" and "4 devices visible, EC2 says trn2.48xlarge has 16" in \
        r["summary"]


def test_aws_unknown_type_and_no_neuron_info(tmp_path, moto_url):
    r, _ = doctor_aws(roots.trn2_host(tmp_path / "a", instance="trn3.48xlarge"),
                      aws_env(moto_url))
    assert r["status"] == "warn" and "InvalidInstanceType" in r["summary"]
    r, _ = doctor_aws(roots.trn2_host(tmp_path / "b", instance="m5.large"),
                      aws_env(moto_url))
    assert r["status"] == "warn" and "no NeuronInfo" in r["summary"]


def test_aws_without_credentials_is_a_soft_warning(tmp_path, moto_url):
    env = aws_env(moto_url)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(k)
    r, p = doctor_aws(roots.trn2_host(tmp_path / "r"), env)
    assert r["status"] == "warn" and "no AWS credentials" in r["summary"]
    assert p.returncode == 0


def test_aws_endpoint_down_is_bounded(tmp_path):
    port = free_port()
    r, _ = doctor_aws(roots.trn2_host(tmp_path / "r"), aws_env(f"http://127.0.0.1:{port}"))
    assert r["status"] == "warn" and "Could not connect" in r["summary"]
