"""doctor --tag-instance / --publish-ssm: evidence for pipelines (boto3 imported only here)."""

from __future__ import annotations

import re

from neuron_env import __version__
from neuron_env.errors import UsageError
from neuron_env.guards import redact
from neuron_env.report.model import Result

VERDICT = {0: "pass", 1: "fail", 2: "error", 3: "error", 4: "timeout"}
TAG_PREFIX = "neuron-env:"
SSM_STANDARD_MAX = 4096  # bytes; the Advanced tier costs money, so the summary is made to fit


def summary_doc(rep) -> dict:
    """The small JSON written to SSM: verdict, counts, failing checks (no host paths), cut down
    (shorter lines, then fewer problems) until it fits a Standard parameter."""
    bad = [r for r in rep.results if r.status in ("fail", "error", "warn")]
    bad.sort(key=lambda r: ("fail", "error", "warn").index(r.status))
    inst = rep.target.get("instance") or {}
    doc = {"schema": "neuron-env.summary/1", "tool": rep.tool, "status":
           VERDICT.get(rep.exit_code, "error"), "exit_code": rep.exit_code,
           "matrix": (rep.matrix or {}).get("release"), "instance": inst.get("type"),
           "instance_id": inst.get("instance_id"), "summary": rep.summary, "problems": [],
           "more_problems": 0}
    from neuron_env.guards.text import cut

    for width, count in ((300, 20), (120, 20), (120, 10), (60, 5), (0, 0)):
        doc["problems"] = [{"id": r.id, "status": r.status,
                            "summary": cut(redact.mask(r.summary), width)}
                           for r in bad[:count]]
        doc["more_problems"] = len(bad) - len(doc["problems"])
        if len(encode(doc).encode()) <= SSM_STANDARD_MAX - 64:  # room for the instance id set later
            break
    return doc


def encode(doc: dict) -> str:
    from neuron_env.util.jsonout import dumps
    return dumps(doc, separators=(",", ":"), ensure_ascii=False)


_SSM_NAME = re.compile(r"^[A-Za-z0-9_.\-/]{1,1011}$")


def check_parameter_name(name: str) -> None:
    """SSM's own naming rules, checked before any check runs (a typo is exit 2, not a warning
    after a ten-minute smoke test)."""
    hint = "e.g. --publish-ssm /ami-pipeline/neuron-env/doctor"
    if not _SSM_NAME.match(name):
        raise UsageError(f"--publish-ssm {name!r}: an SSM parameter name holds only letters, "
                         "digits and _ . - / (at most 1011)", hint=hint)
    if "/" in name and not name.startswith("/"):
        raise UsageError(f"--publish-ssm {name!r}: a hierarchical name starts with /", hint=hint)
    if name.lstrip("/").lower().startswith(("aws", "ssm")):
        raise UsageError(f"--publish-ssm {name!r}: names beginning with aws or ssm are "
                         "reserved by AWS", hint=hint)
    if name.count("/") > 15:
        raise UsageError(f"--publish-ssm {name!r}: at most 15 levels", hint=hint)


def _fix(e, permission: str, resource: str) -> str:
    if e.code == "no-credentials":
        return (f"give the instance a role (instance profile) allowing {permission} on "
                f"{resource}, or set AWS credentials")
    if e.code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation"):
        return f"grant {permission} on {resource} to the instance's role"
    return f"check the network path to AWS and the region; {permission} is needed on {resource}"


def _instance_id(from_dmi: str | None) -> tuple[str | None, str]:
    """DMI's board_asset_tag first; else IMDS instance-id (the running host)."""
    if from_dmi:
        return from_dmi, "dmi"
    from neuron_env.probes import imds

    if imds.disabled():
        return None, f"no DMI board_asset_tag, IMDS disabled ({imds.DISABLED_ENV}=true)"
    ans = imds.instance_id(2.0)
    return ans.value, ans.error or "no DMI board_asset_tag"


def publish(rep, tag: bool, ssm_name: str | None, strict: bool) -> list[Result]:
    from neuron_env.aws import client as aws

    bad = "fail" if strict else "warn"
    out = []
    doc = summary_doc(rep)
    if tag:
        iid, why = _instance_id(doc["instance_id"])
        doc["instance_id"] = iid
        if not iid:
            out.append(Result("aws.tags", "aws", bad, f"cannot tag: instance id unknown ({why})",
                              fix="run on the EC2 instance (DMI board_asset_tag or IMDS)"))
        else:
            tags = {f"{TAG_PREFIX}status": doc["status"], f"{TAG_PREFIX}version": __version__,
                    f"{TAG_PREFIX}matrix": str(doc["matrix"])}
            try:
                aws.tag_instance(iid, tags)
                out.append(Result("aws.tags", "aws", "pass",
                                  f"tagged {iid}: {TAG_PREFIX}status={doc['status']}",
                                  observed=tags))
            except aws.AwsError as e:
                out.append(Result("aws.tags", "aws", bad, f"tags not written: {e.message}",
                                  fix=_fix(e, "ec2:CreateTags", iid)))
    if ssm_name:
        try:
            ver = aws.put_parameter(ssm_name, encode(doc))
            out.append(Result("aws.ssm", "aws", "pass",
                              f"summary written to SSM parameter {ssm_name} (version {ver})"))
        except aws.AwsError as e:
            out.append(Result("aws.ssm", "aws", bad, f"SSM parameter not written: {e.message}",
                              fix=_fix(e, "ssm:PutParameter", ssm_name)))
    return out
