"""The AWS facts doctor --aws adds (EC2 DescribeInstanceTypes); the check is checks/aws.py."""

from __future__ import annotations

from neuron_env.probes.aws_facts import AwsFacts
from neuron_env.util import record as _rec


def with_aws_facts(facts):
    from neuron_env.aws import client as aws

    if not facts.instance.type:
        return _rec.replace(facts, aws=AwsFacts(error="instance type unknown"))
    try:
        info = aws.describe_neuron_info(facts.instance.type)
        return _rec.replace(facts, aws=AwsFacts(info=info, asked=True))
    except aws.AwsError as e:
        return _rec.replace(facts, aws=AwsFacts(error=e.message, asked=True))
