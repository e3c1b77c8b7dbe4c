"""The AWS Pricing API (GetProducts): the on-demand Linux price of one instance type in one
region. Imported only with `trial --aws`; boto3 honours AWS_ENDPOINT_URL_PRICING (the tests
point it at a loopback fake). The Pricing API answers from us-east-1 for every region."""

from __future__ import annotations

import json
from typing import Any

from neuron_env.errors import AwsError

ENDPOINT_REGION = "us-east-1"


def filters(instance_type: str, region: str) -> list[dict[str, str]]:
    pairs = (("instanceType", instance_type), ("regionCode", region),
             ("operatingSystem", "Linux"), ("tenancy", "Shared"), ("preInstalledSw", "NA"),
             ("capacitystatus", "Used"))
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in pairs]


def hourly_usd(price_list: list[Any]) -> float | None:
    """The OnDemand hourly USD price in GetProducts' PriceList (JSON strings), or None."""
    for item in price_list:
        doc = json.loads(item) if isinstance(item, str) else item
        for term in ((doc.get("terms") or {}).get("OnDemand") or {}).values():
            for dim in (term.get("priceDimensions") or {}).values():
                usd = (dim.get("pricePerUnit") or {}).get("USD")
                if usd is not None and str(dim.get("unit", "Hrs")).lower().startswith("hr"):
                    value = float(usd)
                    if value > 0:
                        return value
    return None


def on_demand(instance_type: str, region: str) -> tuple[float, str]:
    """(USD per hour, where it came from); AwsError when the API cannot say."""
    from neuron_env.aws.client import call

    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise AwsError("boto3 is not installed: pip install 'neuron-env[aws]'",
                       "no-boto3") from None
    cfg = Config(connect_timeout=3, read_timeout=10, retries={"max_attempts": 2})
    client = boto3.client("pricing", region_name=ENDPOINT_REGION, config=cfg)
    resp = call(client.get_products, "pricing:GetProducts", ServiceCode="AmazonEC2",
                 Filters=filters(instance_type, region), MaxResults=10)
    usd = hourly_usd(resp.get("PriceList") or [])
    if usd is None:
        raise AwsError(f"pricing:GetProducts: no on-demand Linux price for {instance_type} in "
                       f"{region}", "no-price")
    return usd, f"AWS Pricing API GetProducts ({client.meta.endpoint_url})"
