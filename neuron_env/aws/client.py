"""Every boto3 call lives here, imported only by the commands and options that need AWS."""

from __future__ import annotations

import os

from neuron_env.errors import AwsError
from neuron_env.probes.aws_facts import NeuronInfo


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


def call(fn, what: str, **kw):
    """Call one boto3 operation; botocore's exceptions become AwsError (the one translation,
    used by every module that talks to AWS)."""
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
        code, message = _error_of(e)
        raise AwsError(f"{what}: {code}: {message}", code) from None
    except BotoCoreError as e:
        raise AwsError(f"{what}: {e}", "botocore") from None


def _error_of(e) -> tuple[str, str]:
    """Code and one-line message, also where the body was XML that botocore could not parse
    (a proxy, or moto's IAM answer to a JSON-protocol service)."""
    import re

    err = e.response.get("Error", {})
    code, message = str(err.get("Code") or "error"), str(err.get("Message") or e)
    m = re.search(r"<Code>([^<]+)</Code>\s*<Message>([^<]*)</Message>", message)
    if m:
        code, message = m.group(1), m.group(2)
    message = " ".join(message.split())
    return code, message[:300] + ("…" if len(message) > 300 else "")



def describe_neuron_info(instance_type: str) -> NeuronInfo | None:
    """EC2 DescribeInstanceTypes' NeuronInfo for the type; None when it has none."""
    ec2 = _client("ec2")
    resp = call(ec2.describe_instance_types, f"DescribeInstanceTypes {instance_type}",
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


def tag_instance(instance_id: str, tags: dict[str, str]) -> None:
    from neuron_env.guards.redact import mask

    ec2 = _client("ec2")
    call(ec2.create_tags, f"CreateTags {instance_id}", Resources=[instance_id],
          Tags=[{"Key": k, "Value": mask(v)[:255]} for k, v in tags.items()])


def put_parameter(name: str, value: str) -> int:
    from neuron_env.guards.redact import mask

    ssm = _client("ssm")
    resp = call(ssm.put_parameter, f"PutParameter {name}", Name=name, Value=mask(value),
                 Type="String", Overwrite=True, Tier="Standard")
    return int(resp.get("Version") or 0)


def get_parameter(name: str) -> str:
    ssm = _client("ssm")
    resp = call(ssm.get_parameter, f"GetParameter {name}", Name=name)
    return str(resp["Parameter"]["Value"])
