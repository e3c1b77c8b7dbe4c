"""instance.aws (doctor --aws): the host against EC2's own NeuronInfo. Pure: the facts come
from aws/facts.with_aws_facts (the I/O)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.checks.registry import check, verdict
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts


@check("instance.aws", "aws", opt_in=True, flag="--aws")
def instance_aws(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """EC2 DescribeInstanceTypes agrees with the matrix."""
    a = facts.aws
    if a is None or not a.asked:
        return verdict("skip",
                      f"not asked: {a.error if a else 'no AWS facts'}")
    if a.error:
        return verdict("warn", f"EC2 could not be asked: {a.error}",
                      fix="give the instance (or the pipeline) ec2:DescribeInstanceTypes, or "
                          "drop --aws")
    typ = facts.instance.type
    if a.info is None or not typ:
        return verdict("warn",
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
        return verdict("fail", "; ".join(problems), observed=observed,
                      expected=info.devices, details={"notes": notes} if notes else None)
    if notes:
        return verdict("warn", "; ".join(notes), observed=observed,
                      expected=expected_m.devices if expected_m else None)
    return verdict("pass",
                  f"EC2: {typ} has {info.devices} x {info.device_name or 'Neuron'} "
                  f"({info.cores_per_device} cores each)", observed=observed)
