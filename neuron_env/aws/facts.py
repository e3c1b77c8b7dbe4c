"""instance.aws: compare the host with EC2's own NeuronInfo (doctor --aws)."""

from __future__ import annotations

from neuron_env.report.model import Result
from neuron_env.util import record as _rec
from neuron_env.util.record import record


@record
class AwsFacts:
    info: object | None = None  # aws.NeuronInfo
    error: str | None = None
    asked: bool = False


def with_aws_facts(facts):
    from neuron_env.aws import client as aws

    if not facts.instance.type:
        return _rec.replace(facts, aws=AwsFacts(error="instance type unknown"))
    try:
        info = aws.describe_neuron_info(facts.instance.type)
        return _rec.replace(facts, aws=AwsFacts(info=info, asked=True))
    except aws.AwsError as e:
        return _rec.replace(facts, aws=AwsFacts(error=e.message, asked=True))


def instance_aws(facts, m, ctx) -> Result:
    a = facts.aws
    if a is None or not a.asked:
        return Result("instance.aws", "aws", "skip",
                      f"not asked: {a.error if a else 'no AWS facts'}")
    if a.error:
        return Result("instance.aws", "aws", "warn", f"EC2 could not be asked: {a.error}",
                      fix="give the instance (or the pipeline) ec2:DescribeInstanceTypes, or "
                          "drop --aws")
    typ = facts.instance.type
    if a.info is None:
        return Result("instance.aws", "aws", "warn",
                      f"EC2 reports no NeuronInfo for {typ}", observed=None)
    info = a.info
    expected_m = m.instance_type(typ)[1]
    nodes = len(facts.driver.device_nodes)
    observed = {"devices": info.devices, "cores_per_device": info.cores_per_device,
                "memory_per_device_mib": info.memory_per_device_mib, "name": info.device_name}
    problems, notes = [], []
    if expected_m and expected_m.devices and info.devices != expected_m.devices:
        notes.append(f"EC2 says {info.devices} devices, the matrix {expected_m.devices}")
    if not facts.instance.assumed and nodes and info.devices and nodes != info.devices:
        problems.append(f"{nodes} devices visible, EC2 says {typ} has {info.devices}")
    if (expected_m and expected_m.memory_per_device_gib and info.memory_per_device_mib and
            info.memory_per_device_mib != expected_m.memory_per_device_gib * 1024):
        # EC2 (and moto) memory figures have disagreed with AWS docs: a note, never a failure
        notes.append(f"EC2 memory {info.memory_per_device_mib} MiB/device vs the matrix's "
                     f"{expected_m.memory_per_device_gib} GiB")
    if problems:
        return Result("instance.aws", "aws", "fail", "; ".join(problems), observed=observed,
                      expected=info.devices, details={"notes": notes} if notes else None)
    if notes:
        return Result("instance.aws", "aws", "warn", "; ".join(notes), observed=observed,
                      expected=expected_m.devices if expected_m else None)
    return Result("instance.aws", "aws", "pass",
                  f"EC2: {typ} has {info.devices} x {info.device_name or 'Neuron'} "
                  f"({info.cores_per_device} cores each)", observed=observed)
