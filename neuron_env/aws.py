"""Every boto3 call lives here, imported only by the commands and options that need AWS."""

from __future__ import annotations

import os
from dataclasses import dataclass


class AwsError(Exception):
    """A soft failure: no credentials, access denied, unknown type, endpoint down."""

    def __init__(self, message: str, code: str = "aws") -> None:
        super().__init__(message)
        self.message, self.code = message, code


def _client(service: str):
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise AwsError("boto3 is not installed: pip install 'neuron-env[aws]'",
                       "no-boto3") from None
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    cfg = Config(connect_timeout=3, read_timeout=5, retries={"max_attempts": 2})
    return boto3.client(service, region_name=region, config=cfg)


def _call(fn, what: str, **kw):
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    try:
        return fn(**kw)
    except (NoCredentialsError, PartialCredentialsError):
        raise AwsError(f"{what}: no AWS credentials found (environment, profile or instance "
                       "role)", "no-credentials") from None
    except ClientError as e:
        err = e.response.get("Error", {})
        raise AwsError(f"{what}: {err.get('Code', 'error')}: {err.get('Message', e)}",
                       err.get("Code", "client-error")) from None
    except BotoCoreError as e:
        raise AwsError(f"{what}: {e}", "botocore") from None


@dataclass(frozen=True)
class NeuronInfo:
    instance_type: str
    devices: int | None
    cores_per_device: int | None
    core_version: int | None
    memory_per_device_mib: int | None
    device_name: str | None
    total_memory_mib: int | None


def describe_neuron_info(instance_type: str) -> NeuronInfo | None:
    """EC2 DescribeInstanceTypes' NeuronInfo for the type; None when it has none."""
    ec2 = _client("ec2")
    resp = _call(ec2.describe_instance_types, f"DescribeInstanceTypes {instance_type}",
                 InstanceTypes=[instance_type])
    items = resp.get("InstanceTypes") or []
    if not items:
        return None
    info = items[0].get("NeuronInfo")
    if not info:
        return None
    dev = (info.get("NeuronDevices") or [{}])[0]
    core = dev.get("CoreInfo") or {}
    return NeuronInfo(instance_type, dev.get("Count"), core.get("Count"), core.get("Version"),
                      (dev.get("MemoryInfo") or {}).get("SizeInMiB"), dev.get("Name"),
                      info.get("TotalNeuronDeviceMemoryInMiB"))
