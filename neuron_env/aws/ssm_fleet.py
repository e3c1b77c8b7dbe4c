"""The boto3 calls of `fleet doctor` and `fleet report s3://...`: EC2 target resolution, SSM
Run Command (send, poll, per-instance output) and S3 reads. Imported only by those commands.
Retries use botocore's standard mode, which backs off and retries throttling errors."""

from __future__ import annotations

import os
from typing import Any

from neuron_env.aws.client import AwsError, call

RETRIES = 8


def client(service: str, region: str | None = None):
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise AwsError("boto3 is not installed: pip install 'neuron-env[aws]'",
                       "no-boto3") from None
    region = (region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
              or "us-east-1")
    cfg = Config(connect_timeout=5, read_timeout=30,
                 retries={"mode": "standard", "max_attempts": RETRIES})
    return boto3.client(service, region_name=region, config=cfg)


def instances_by_tag(ec2, key: str, value: str) -> list[str]:
    """Running/pending instance ids with tag KEY=VALUE (what SSM will target)."""
    ids: list[str] = []
    token = None
    while True:
        kw: dict[str, Any] = {"Filters": [
            {"Name": f"tag:{key}", "Values": [value]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]}]}
        if token:
            kw["NextToken"] = token
        resp = call(ec2.describe_instances, f"DescribeInstances tag:{key}={value}", **kw)
        ids += [i["InstanceId"] for r in resp.get("Reservations", [])
                for i in r.get("Instances", [])]
        token = resp.get("NextToken")
        if not token:
            return sorted(set(ids))


def send_command(ssm, **kw) -> dict[str, Any]:
    return call(ssm.send_command, "SendCommand AWS-RunShellScript", **kw)["Command"]


def command_status(ssm, command_id: str) -> dict[str, Any]:
    resp = call(ssm.list_commands, f"ListCommands {command_id}", CommandId=command_id)
    return (resp.get("Commands") or [{}])[0]


def invocation(ssm, command_id: str, instance_id: str) -> dict[str, Any] | None:
    """GetCommandInvocation; None when SSM made no invocation for the instance."""
    try:
        return call(ssm.get_command_invocation, f"GetCommandInvocation {instance_id}",
                     CommandId=command_id, InstanceId=instance_id)
    except AwsError as e:
        if e.code in ("InvocationDoesNotExist", "InvalidInstanceId"):
            return None
        raise


MAX_OBJECT = 16 * 1024 * 1024  # as a local report file (fleet.sources.MAX_REPORT)
CHUNK = 1 << 16


def s3_get(s3, bucket: str, key: str, limit: int = MAX_OBJECT) -> bytes:
    """An object's bytes, at most `limit`: a larger one (by its ContentLength, or by what the
    stream actually delivers) is AwsError "too-large", read no further than limit + 1 bytes."""
    where = f"s3://{bucket}/{key}"
    resp = call(s3.get_object, where, Bucket=bucket, Key=key)
    body = resp["Body"]
    try:
        size = resp.get("ContentLength")
        if isinstance(size, int) and size > limit:
            raise AwsError(f"{where} is too large ({size} bytes, cap {limit}): skipped",
                           "too-large")
        chunks, got = [], 0
        while got <= limit:
            b = call(body.read, where, amt=min(CHUNK, limit + 1 - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got > limit:
            raise AwsError(f"{where} is too large (over {limit} bytes, cap {limit}): skipped",
                           "too-large")
        return b"".join(chunks)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()


def s3_keys(s3, bucket: str, prefix: str) -> list[str]:
    keys: list[str] = []
    kw: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    while True:
        resp = call(s3.list_objects_v2, f"ListObjectsV2 s3://{bucket}/{prefix}", **kw)
        keys += [o["Key"] for o in resp.get("Contents", [])]
        if not resp.get("IsTruncated"):
            return keys
        kw["ContinuationToken"] = resp["NextContinuationToken"]


def s3_get_bounded(s3: Any, bucket: str, key: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of an object (a Range request): the caller refuses more."""
    resp = call(s3.get_object, f"s3://{bucket}/{key}", Bucket=bucket, Key=key,
                 Range=f"bytes=0-{limit}")
    return bytes(resp["Body"].read(limit + 1))
