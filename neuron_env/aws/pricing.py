"""The AWS Pricing API (GetProducts): the on-demand Linux price of one instance type in one
region. Imported only with `trial --aws`; boto3 honours AWS_ENDPOINT_URL_PRICING (the tests
point it at a loopback fake). The Pricing API answers from us-east-1 for every region."""

from __future__ import annotations

import math
from typing import Any

from neuron_env.errors import AwsError

ENDPOINT_REGION = "us-east-1"


def filters(instance_type: str, region: str) -> list[dict[str, str]]:
    pairs = (("instanceType", instance_type), ("regionCode", region),
             ("operatingSystem", "Linux"), ("tenancy", "Shared"), ("preInstalledSw", "NA"),
             ("capacitystatus", "Used"))
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in pairs]


MAX_PRODUCT = 1024 * 1024  # one GetProducts PriceList entry is a few KiB


def _bad(why: str) -> AwsError:
    return AwsError(f"pricing:GetProducts: a malformed answer ({why}); no price taken from it",
                    "bad-answer")


def _objects(doc: Any, *path: str) -> list[Any]:
    """The values of the object at doc[path...] (an empty list when absent); AwsError for a
    part of the wrong type."""
    cur = doc
    for key in path:
        if not isinstance(cur, dict):
            raise _bad(f"{'.'.join(path)}: not an object")
        cur = cur.get(key)
        if cur is None:
            return []
    if not isinstance(cur, dict):
        raise _bad(f"{'.'.join(path)}: not an object")
    return list(cur.values())


def hourly_usd(price_list: Any) -> float | None:
    """The OnDemand hourly USD price in GetProducts' PriceList (JSON strings), or None. The
    answer is untrusted input: each entry goes through the one reader (guards/files.parse_json:
    depth, no NaN/Infinity) and every part is type-checked; a price must be a finite number
    > 0. A malformed answer is AwsError("bad-answer"): a note on the cost, never a traceback."""
    from neuron_env.errors import BadInput
    from neuron_env.guards.files import number, parse_json

    if not isinstance(price_list, list):
        raise _bad("PriceList is not a list")
    for item in price_list:
        if isinstance(item, str):
            if len(item) > MAX_PRODUCT:
                raise _bad(f"a PriceList entry larger than {MAX_PRODUCT} bytes")
            try:
                doc = parse_json(item, "a PriceList entry")
            except BadInput as e:
                raise _bad(e.message) from None
        else:
            doc = item
        for term in _objects(doc, "terms", "OnDemand"):
            for dim in _objects(term, "priceDimensions"):
                if not isinstance(dim, dict):
                    raise _bad("a priceDimension is not an object")
                unit = dim.get("unit", "Hrs")
                ppu = dim.get("pricePerUnit")
                if ppu is not None and not isinstance(ppu, dict):
                    raise _bad("pricePerUnit is not an object")
                usd = (ppu or {}).get("USD")
                if usd is None or not str(unit).lower().startswith("hr"):
                    continue
                value = number(usd)  # the one conversion: a 400-digit price is inf, not a crash
                if not math.isfinite(value) or value < 0:
                    raise _bad(f"USD {str(usd)[:40]!r} is not a finite price")
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
    usd = hourly_usd(resp.get("PriceList") or [] if isinstance(resp, dict) else None)
    if usd is None:
        raise AwsError(f"pricing:GetProducts: no on-demand Linux price for {instance_type} in "
                       f"{region}", "no-price")
    return usd, f"AWS Pricing API GetProducts ({client.meta.endpoint_url})"
