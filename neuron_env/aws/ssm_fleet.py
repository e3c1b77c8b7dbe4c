"""The boto3 calls of `fleet doctor` and `fleet report s3://...`: EC2 target resolution, SSM
Run Command (send, poll, per-instance output) and S3 reads. Imported only by those commands.
Retries use botocore's standard mode, which backs off and retries throttling errors."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from neuron_env.aws.client import AwsError, call

RETRIES = 8
T = TypeVar("T")


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
# botocore's read timeout bounds each recv, not an exchange: an endpoint that trickles a body
# one byte every few seconds never trips it. Each S3 exchange (one GetObject with its body, one
# ListObjectsV2 page) therefore has a deadline of its own: a base plus an allowance for the
# object's size, never past the caller's deadline (the command's budget).
OBJECT_BASE = 10.0  # s
OBJECT_RATE = 1024 * 1024  # bytes/s: 16 MiB, the cap, gets 10 + 16 s


class _Exchange:
    """What the worker of one bounded exchange shares with the caller that waits on it."""

    def __init__(self, start: float, deadline: float, limit: float) -> None:
        self.start, self.deadline, self.limit = start, deadline, limit
        self.body: Any = None

    def allow(self, size: int) -> None:
        """The object's size is known: its transfer allowance moves the deadline on."""
        self.deadline = min(self.limit, self.deadline + size / OBJECT_RATE)


def bounded(work: Callable[[_Exchange], T], what: str, limit: float | None = None,
            base: float = OBJECT_BASE) -> T:
    """`work` run to completion within `base` s (plus what it `allow`s), never past the
    monotonic `limit`; else AwsError "timed-out": "WHAT: timed out after N s". The worker is a
    daemon thread; at the deadline its body's socket is shut down (which ends the read under
    way) and it is left behind."""
    import threading

    now = time.monotonic()
    lim = limit if limit is not None else now + 86400.0
    if lim <= now:
        raise AwsError(f"{what}: not read: the time allowed ran out before it", "timed-out")
    ex = _Exchange(now, min(lim, now + base), lim)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work(ex)
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name=f"s3 {what}", daemon=True)
    t.start()
    while t.is_alive():
        left = ex.deadline - time.monotonic()
        if left <= 0:
            _cut(ex.body)
            raise AwsError(f"{what}: timed out after {ex.deadline - ex.start:.0f} s",
                           "timed-out")
        t.join(min(left, 0.2))  # the deadline can move on (allow) while we wait
    if "error" in box:
        raise box["error"]
    return cast(T, box["value"])


def _cut(body: Any) -> None:
    """Best effort: shut down the socket under a botocore StreamingBody (urllib3 response ->
    http.client response -> socket file), so the endpoint sees the end; a daemon thread is
    left behind either way."""
    import contextlib
    import socket

    with contextlib.suppress(Exception):
        sock = body._raw_stream._fp.fp.raw._sock
        sock.shutdown(socket.SHUT_RDWR)


def s3_get(s3: Any, bucket: str, key: str, limit: int = MAX_OBJECT,
           deadline: float | None = None) -> bytes:
    """An object's bytes, at most `limit`: a larger one (by its ContentLength, or by what the
    stream actually delivers) is AwsError "too-large", read no further than limit + 1 bytes.
    The whole exchange is bounded (`bounded`): AwsError "timed-out" past its deadline."""
    where = f"s3://{bucket}/{key}"

    def work(ex: _Exchange) -> bytes:
        resp = call(s3.get_object, where, Bucket=bucket, Key=key)
        body = ex.body = resp["Body"]
        try:
            size = resp.get("ContentLength")
            if isinstance(size, int) and size > limit:
                raise AwsError(f"{where} is too large ({size} bytes, cap {limit}): skipped",
                               "too-large")
            ex.allow(size if isinstance(size, int) else limit)
            chunks, got = [], 0
            while got <= limit:
                b = call(body.read, where, amt=min(CHUNK, limit + 1 - got))
                if not b:
                    break
                chunks.append(b)
                got += len(b)
            if got > limit:
                raise AwsError(f"{where} is too large (over {limit} bytes, cap {limit}): "
                               "skipped", "too-large")
            return b"".join(chunks)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()

    return bounded(work, where, deadline)


def s3_keys(s3: Any, bucket: str, prefix: str, deadline: float | None = None) -> list[str]:
    """Every key under `prefix`; each ListObjectsV2 page is one bounded exchange."""
    keys: list[str] = []
    kw: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    what = f"ListObjectsV2 s3://{bucket}/{prefix}"
    while True:
        resp = bounded(lambda _ex: call(s3.list_objects_v2, what, **kw), what, deadline)
        keys += [o["Key"] for o in resp.get("Contents", [])]
        if not resp.get("IsTruncated"):
            return keys
        kw["ContinuationToken"] = resp["NextContinuationToken"]


def s3_get_bounded(s3: Any, bucket: str, key: str, limit: int,
                   timeout: float | None = None) -> bytes:
    """At most `limit` + 1 bytes of an object (a Range request): the caller refuses more.
    One bounded exchange, never longer than `timeout` s when given."""
    where = f"s3://{bucket}/{key}"

    def work(ex: _Exchange) -> bytes:
        resp = call(s3.get_object, where, Bucket=bucket, Key=key, Range=f"bytes=0-{limit}")
        body = ex.body = resp["Body"]
        ex.allow(min(limit + 1, int(resp.get("ContentLength") or limit + 1)))
        try:
            return bytes(call(body.read, where, amt=limit + 1))
        finally:
            body.close()

    if timeout is None:
        return bounded(work, where)
    return bounded(work, where, time.monotonic() + timeout, base=timeout)
