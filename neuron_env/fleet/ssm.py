"""`fleet doctor`: SSM Run Command (AWS-RunShellScript) sends `neuron-env doctor --format json`
to the targets, polls with backoff, reads each instance's report (S3 at the agent's key layout,
else the first 24,000 characters SSM keeps of stdout) and returns aggregate.Entry objects."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from neuron_env.errors import ConfigurationError, UsageError
from neuron_env.fleet.aggregate import Entry
from neuron_env.fleet.sources import parse

STDOUT_LIMIT = 24000  # what GetCommandInvocation keeps of stdout
COLLECTORS = 8  # GetCommandInvocation / GetObject calls in flight
TERMINAL = {"Success", "Failed", "TimedOut", "Cancelled", "Cancelling"}
UNREACHABLE = {  # invocation status/details -> why the instance gave no report
    "Undeliverable": "not-managed", "DeliveryTimedOut": "offline", "TimedOut": "timed-out",
    "ExecutionTimedOut": "timed-out", "Cancelled": "cancelled", "Terminated": "cancelled",
    "AccessDenied": "access-denied", "InvalidPlatform": "invalid-platform"}
_IID = re.compile(r"^(i|mi)-[0-9a-f]{8,17}$")
_RATE = re.compile(r"^[0-9]+%?$")


@dataclass(frozen=True)
class FleetOptions:
    targets: str
    max_concurrency: str = "50"
    max_errors: str = "0"
    s3_bucket: str | None = None
    s3_prefix: str = "neuron-env"
    timeout: int = 600
    doctor_args: list[str] = field(default_factory=list)
    neuron_env: str = "neuron-env"
    region: str | None = None
    poll_max: float = 15.0


def parse_targets(spec: str) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """`tag:K=V` or `i-1,i-2` -> (SendCommand target arguments, the tag or None)."""
    spec = (spec or "").strip()
    if spec.startswith("tag:"):
        key, eq, value = spec[4:].partition("=")
        if not key or not eq or not value:
            raise UsageError(f"--targets {spec!r}: expected tag:KEY=VALUE",
                             hint="e.g. --targets tag:cluster=trn2-train")
        return {"Targets": [{"Key": f"tag:{key}", "Values": [value]}]}, (key, value)
    ids = [x.strip() for x in spec.split(",") if x.strip()]
    bad = [x for x in ids if not _IID.match(x)]
    if not ids or bad:
        raise UsageError(f"--targets {spec!r}: {', '.join(bad) or 'empty'} is not an instance "
                         "id", hint="use tag:KEY=VALUE or i-0123456789abcdef0,i-...")
    if len(ids) > 50:
        raise UsageError(f"--targets: {len(ids)} instance ids; SSM takes at most 50",
                         hint="tag the instances and use --targets tag:KEY=VALUE")
    return {"InstanceIds": ids}, None


def check_rate(flag: str, value: str) -> str:
    n = int(value.rstrip("%")) if _RATE.match(value or "") else -1
    if n < (1 if flag == "--max-concurrency" else 0) or (value.endswith("%") and n > 100):
        raise UsageError(f"{flag} {value!r}: expected a count N or a percentage N%",
                         hint=f"e.g. {flag} 10 or {flag} 25%")
    return value


def remote_command(o: FleetOptions) -> str:
    if any(a == "--format" or a.startswith("--format=") for a in o.doctor_args):
        raise UsageError("--doctor-args: --format is set by fleet doctor (json)",
                         hint="drop --format from --doctor-args")
    from neuron_env.util import template

    template.values((("--neuron-env", o.neuron_env),
                     *(("--doctor-args", a) for a in o.doctor_args)))
    return template.sh_join([o.neuron_env, "doctor", "--format", "json", *o.doctor_args])


def send_args(o: FleetOptions, target_args: dict[str, Any]) -> dict[str, Any]:
    """The SendCommand request (pure: tests and --dry-run read it)."""
    if not 30 <= o.timeout <= 172800:
        raise UsageError(f"--timeout {o.timeout}: SSM takes 30..172800 seconds",
                         hint="e.g. --timeout 600")
    kw: dict[str, Any] = {
        **target_args, "DocumentName": "AWS-RunShellScript", "Comment": "neuron-env fleet doctor",
        "Parameters": {"commands": [remote_command(o)], "executionTimeout": [str(o.timeout)]},
        "MaxConcurrency": check_rate("--max-concurrency", o.max_concurrency),
        "MaxErrors": check_rate("--max-errors", o.max_errors)}
    if o.s3_bucket:
        kw["OutputS3BucketName"] = o.s3_bucket
        if o.s3_prefix.strip("/"):
            kw["OutputS3KeyPrefix"] = o.s3_prefix.strip("/")
    return kw


def stdout_key(prefix: str, command_id: str, instance_id: str) -> str:
    """Where the SSM agent puts an instance's stdout for AWS-RunShellScript."""
    parts = [prefix.strip("/")] if prefix.strip("/") else []
    return "/".join([*parts, command_id, instance_id, "awsrunShellScript",
                     "0.awsrunShellScript", "stdout"])


def run(o: FleetOptions) -> tuple[list[Entry], dict[str, Any]]:
    from neuron_env.aws import ssm_fleet
    from neuron_env.aws.client import AwsError

    target_args, tag = parse_targets(o.targets)
    kw = send_args(o, target_args)
    try:
        ssm = ssm_fleet.client("ssm", o.region)
        ids = target_args.get("InstanceIds") or (tag and ssm_fleet.instances_by_tag(
            ssm_fleet.client("ec2", o.region), *tag))
        if not ids:
            raise ConfigurationError(f"--targets {o.targets}: no pending or running instance "
                                     "has this tag", hint="check the tag and --region")
        cmd = ssm_fleet.send_command(ssm, **kw)
        status = poll(ssm, cmd["CommandId"], time.monotonic() + o.timeout + 120, o.poll_max)
        s3 = ssm_fleet.client("s3", o.region) if o.s3_bucket else None
        entries = collect_all(ssm, s3, o, cmd["CommandId"], ids)
    except AwsError as e:
        raise ConfigurationError(f"fleet doctor: {e.message}", hint=_hint(e.code)) from None
    source = {"engine": "ssm", "command_id": cmd["CommandId"], "targets": o.targets,
              "max_concurrency": kw["MaxConcurrency"], "max_errors": kw["MaxErrors"],
              "s3": f"s3://{o.s3_bucket}/{kw.get('OutputS3KeyPrefix', '')}" if o.s3_bucket
              else None, "status": status.get("Status"), "command": remote_command(o)}
    return entries, source


def _hint(code: str) -> str:
    if "AccessDenied" in code or code in ("UnauthorizedOperation", "InvalidClientTokenId"):
        return ("the caller needs ec2:DescribeInstances, ssm:SendCommand, ssm:ListCommands, "
                "ssm:GetCommandInvocation (and s3:GetObject with --s3-bucket)")
    return "check the credentials, --region and the targets"


def poll(ssm, command_id: str, deadline: float, poll_max: float) -> dict[str, Any]:
    """ListCommands with exponential backoff until the command ends or the deadline passes."""
    from neuron_env.aws import ssm_fleet

    delay = 0.5
    while True:
        cmd = ssm_fleet.command_status(ssm, command_id)
        if cmd.get("Status") in TERMINAL or time.monotonic() + delay > deadline:
            return cmd
        time.sleep(delay)
        delay = min(delay * 2, poll_max)


def collect_all(ssm, s3, o: FleetOptions, command_id: str, ids: list[str]) -> list[Entry]:
    """Every instance's report, a few at a time (boto3 clients are thread-safe; throttling is
    retried by botocore)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(COLLECTORS, len(ids))) as pool:
        return list(pool.map(lambda iid: collect(ssm, s3, o, command_id, iid), ids))


def collect(ssm, s3, o: FleetOptions, command_id: str, iid: str) -> Entry:
    """One instance's report (or why there is none)."""
    from neuron_env.aws import ssm_fleet
    from neuron_env.aws.client import AwsError

    inv = ssm_fleet.invocation(ssm, command_id, iid)
    if inv is None:
        return Entry(iid, f"ssm:{command_id}", unreachable="not-managed",
                     detail="SSM made no invocation: no SSM agent registered for it (agent, "
                     "instance profile AmazonSSMManagedInstanceCore, network to SSM)")
    status, details = inv.get("Status"), inv.get("StatusDetails")
    if details in UNREACHABLE or status not in ("Success", "Failed"):
        why = UNREACHABLE.get(details or "") or UNREACHABLE.get(status or "") or "timed-out"
        return Entry(iid, f"ssm:{command_id}", unreachable=why,
                     detail=f"SSM invocation {status} ({details})")
    code = inv.get("ResponseCode")
    if s3 is not None and o.s3_bucket:
        key = stdout_key(o.s3_prefix, command_id, iid)
        src = f"s3://{o.s3_bucket}/{key}"
        try:
            raw = ssm_fleet.s3_get(s3, o.s3_bucket, key).decode("utf-8", "replace")
        except AwsError as e:
            denied = "access-denied" if "AccessDenied" in e.code else None
            return Entry(iid, src, unreachable=denied, unreadable=None if denied else e.message,
                         detail=e.message, exit_code=code)
        return _entry(raw, iid, src, code, False, inv)
    raw = inv.get("StandardOutputContent") or ""
    truncated = len(raw) >= STDOUT_LIMIT or "---Output truncated---" in raw
    return _entry(raw, iid, f"ssm:{command_id}", code, truncated, inv)


def _entry(raw: str, iid: str, src: str, code, truncated: bool, inv: dict) -> Entry:
    if not raw.strip():
        err = " ".join((inv.get("StandardErrorContent") or "").split())[:200]
        return Entry(iid, src, unreadable=f"no report on stdout (exit {code})"
                     + (f": {err}" if err else ""), exit_code=code)
    e = parse(raw, iid, src, exit_code=code, truncated=truncated)
    if truncated and e.doc is None:
        return Entry(iid, src, exit_code=code, truncated=True, unreadable="stdout truncated "
                     f"at {STDOUT_LIMIT:,} characters by SSM: pass --s3-bucket to read whole "
                     "reports")
    return Entry(iid, src, doc=e.doc, unreadable=e.unreadable, exit_code=code,
                 truncated=truncated)
