"""Which hourly price a run's cost uses: --price-per-hour, else the price table (bundled data,
each entry with its source and date), or the AWS Pricing API with --aws. The instance type is
--instance-type or the host's (as doctor finds it: DMI, then IMDS); the region --region, the
environment (AWS_REGION, AWS_DEFAULT_REGION), IMDS on EC2, else us-east-1."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_env.errors import AwsError, ConfigurationError, UsageError

TABLE = Path(__file__).resolve().parent.parent / "data" / "prices.toml"
DEFAULT_REGION = "us-east-1"
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")


@dataclass(frozen=True)
class Price:
    usd_per_hour: float | None
    instance_type: str | None
    region: str
    source: str  # "flag", "table", "aws", "none"
    reference: str | None = None  # the table entry's source URL (and date), the API used
    note: str | None = None
    on_host: bool | None = None  # the priced instance type is this host's (DMI/IMDS said so)
    warning: str | None = None  # the priced type is not one the default matrix supports

    def as_dict(self) -> dict[str, Any]:
        return {"usd_per_hour": self.usd_per_hour, "instance_type": self.instance_type,
                "region": self.region, "source": self.source, "reference": self.reference,
                "note": self.note, "on_host": self.on_host, "warning": self.warning}


def unsupported(instance_type: str | None) -> str | None:
    """A warning when a Trainium/Inferentia type priced here is not one the default matrix
    (the release doctor checks against) supports: the price is for hardware that release does
    not run on (trn1 under Neuron 2.34). GPU and CPU types (a baseline) are not judged."""
    from neuron_env.matrix.catalog import select
    from neuron_env.matrix.model import family_of

    if not instance_type or not family_of(instance_type).startswith(("trn", "inf")):
        return None
    try:
        m = select(None)
    except ConfigurationError as e:  # a broken user matrix: the price stays, said unjudged
        return f"{instance_type}: not judged against a matrix ({e})"
    fam, typ = m.instance_type(instance_type)
    if fam is not None and typ is not None:
        return None
    known = ", ".join(t.name for f in m.instances for t in f.types) or "none"
    return (f"{instance_type} is not an instance type Neuron {m.release} (the default matrix) "
            f"supports ({known}): this prices hardware that release does not run on")


def load_table(path: Path = TABLE) -> list[dict[str, Any]]:
    from neuron_env.matrix.loader import toml

    doc = toml().loads(path.read_text(encoding="utf-8"))
    rows = doc.get("price") or []
    for r in rows:
        if not r.get("instance_type") or not r.get("region") or not r.get("source") or \
                not r.get("date"):
            raise ValueError(f"{path}: every [[price]] needs instance_type, region, source, "
                             f"date: {r}")
        usd = r.get("usd_per_hour")
        if usd is not None and (isinstance(usd, bool) or not isinstance(usd, (int, float))
                                or not math.isfinite(usd) or usd < 0):
            raise ValueError(f"{path}: usd_per_hour must be a number >= 0: {r}")
        if "note" in r and not (isinstance(r["note"], str) and r["note"].strip()):
            raise ValueError(f"{path}: note, when given, must be a non-empty string: {r}")
    return rows


def _with_note(text: str, row: dict[str, Any]) -> str:
    """The choice's note, then the table entry's own note (third-party, older than a change)."""
    return f"{text}; {row['note']}" if row.get("note") else text


def lookup(instance_type: str, region: str, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in rows if r["instance_type"] == instance_type and
                 r["region"] == region), None)


def host_instance_type() -> tuple[str | None, str | None]:
    """(type, where): as doctor finds it (DMI first; IMDS only on EC2 or a set endpoint)."""
    from neuron_env.probes.host import make_root
    from neuron_env.probes.instance import probe_instance

    facts = probe_instance(make_root(None), None)
    return facts.type, facts.source


def host_region(flag: str | None, on_ec2: bool) -> tuple[str, str]:
    if flag:
        if not _REGION.match(flag):
            raise UsageError(f"--region {flag!r}: not a region name like us-east-1")
        return flag, "flag"
    env = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if env:
        return env, "environment"
    if on_ec2:
        from neuron_env.probes import imds

        ans = imds.query("placement/region", 1.0, check=_REGION)
        if ans.value:
            return ans.value, "imds"
    return DEFAULT_REGION, "default"


def choose(price_per_hour: float | None, instance_type: str | None, region: str | None,
           use_aws: bool) -> Price:
    """The price, with whether the priced type is this host's (`on_host`: a figure measured
    here is a measurement of that instance only then) and a warning for an unsupported type."""
    from dataclasses import replace

    p = _choose(price_per_hour, instance_type, region, use_aws)
    on_host = p.on_host
    if on_host is None:  # --instance-type given: is this host one? (DMI only: no network)
        on_host = p.instance_type is None or dmi_instance_type() == p.instance_type
    return replace(p, on_host=on_host, warning=unsupported(p.instance_type))


def dmi_instance_type() -> str | None:
    """This host's instance type as its DMI tables say (EC2 writes it there), else None."""
    from neuron_env.probes.host import make_root, probe_dmi

    dmi = probe_dmi(make_root(None))
    return dmi.product_name.lower() if dmi.is_ec2 and dmi.product_name else None


def _choose(price_per_hour: float | None, instance_type: str | None, region: str | None,
            use_aws: bool) -> Price:
    if price_per_hour is not None:
        if not (math.isfinite(price_per_hour) and price_per_hour >= 0):
            raise UsageError(f"--price-per-hour {price_per_hour}: a finite number >= 0 "
                             "is expected (e.g. 1.34)")
        return Price(price_per_hour, instance_type, region or DEFAULT_REGION, "flag",
                     note="from --price-per-hour")
    where: str | None = "flag"
    if not instance_type:
        instance_type, where = host_instance_type()
    reg, reg_from = host_region(region, where in ("dmi", "imds"))
    if instance_type and where in ("dmi", "imds"):
        return replace_on_host(_priced(instance_type, reg, reg_from, use_aws))
    return _priced(instance_type, reg, reg_from, use_aws)


def replace_on_host(p: Price) -> Price:
    from dataclasses import replace

    return replace(p, on_host=True)


def _priced(instance_type: str | None, reg: str, reg_from: str, use_aws: bool) -> Price:
    if not instance_type:
        return Price(None, None, reg, "none", note="no instance type: not an EC2 host and no "
                     "--instance-type (give --price-per-hour X, or --instance-type T)")
    instance_type = instance_type.lower()
    if use_aws:
        from neuron_env.aws.pricing import on_demand

        try:
            usd, ref = on_demand(instance_type, reg)
        except AwsError as e:
            return Price(None, instance_type, reg, "aws", note=f"AWS Pricing API: {e}")
        return Price(usd, instance_type, reg, "aws", reference=ref,
                     note=f"live on-demand price (region from {reg_from})")
    row = lookup(instance_type, reg, load_table())
    if row is None:
        return Price(None, instance_type, reg, "table", note=f"{instance_type} in {reg} is not "
                     f"in the price table ({TABLE.name}): give --price-per-hour X or --aws")
    if row.get("usd_per_hour") is None:
        return Price(None, instance_type, reg, "table", reference=row["source"],
                     note=_with_note(f"the price table has no sourced price for {instance_type} "
                                     f"in {reg}: give --price-per-hour X or --aws", row))
    return Price(float(row["usd_per_hour"]), instance_type, reg, "table",
                 reference=f"{row['source']} ({row['date']})",
                 note=_with_note(f"price table, region from {reg_from}", row))
