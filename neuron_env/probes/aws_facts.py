"""The AWS facts doctor --aws adds (EC2 DescribeInstanceTypes' NeuronInfo), as plain values:
declared here, under the probes that hold every other fact, so `probes/facts.py` names them
without importing `aws/` (the layer above, which fills them: `aws/facts.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from neuron_env.util.record import record


@dataclass(frozen=True)
class NeuronInfo:
    instance_type: str
    devices: int | None
    cores_per_device: int | None
    core_version: int | None
    memory_per_device_mib: int | None
    device_name: str | None
    total_memory_mib: int | None


@record
class AwsFacts:
    info: NeuronInfo | None = None
    error: str | None = None
    asked: bool = False
