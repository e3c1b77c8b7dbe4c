"""Instance type: --instance-type, then DMI under the root, then IMDSv2 (running host only)."""

from __future__ import annotations

import os

from neuron_env.probes import imds
from neuron_env.probes.host import DMIFacts, Root, probe_dmi
from neuron_env.util.record import record


@record
class InstanceFacts:
    type: str | None
    source: str | None  # "flag", "dmi", "imds", None
    assumed: bool = False
    is_ec2: bool | None = None
    instance_id: str | None = None
    notes: tuple[str, ...] = ()
    dmi: DMIFacts | None = None


def probe_instance(root: Root, flag: str | None, imds_budget: float = 1.0) -> InstanceFacts:
    dmi = probe_dmi(root)
    notes: list[str] = []
    if flag:
        return InstanceFacts(flag.strip().lower(), "flag", assumed=True, is_ec2=dmi.is_ec2,
                             instance_id=dmi.board_asset_tag if dmi.is_ec2 else None,
                             notes=("assumed from --instance-type",), dmi=dmi)
    if dmi.is_ec2 and dmi.product_name:
        return InstanceFacts(dmi.product_name.lower(), "dmi", is_ec2=True,
                             instance_id=dmi.board_asset_tag, dmi=dmi)
    if dmi.is_ec2 is False and not os.environ.get(imds.ENDPOINT_ENV):
        notes.append(f"DMI vendor is {dmi.sys_vendor!r}, not 'Amazon EC2': IMDS not asked")
        return InstanceFacts(None, None, is_ec2=False, notes=tuple(notes), dmi=dmi)
    if not dmi.present:
        notes.append(f"no DMI ({root.file('sys/devices/virtual/dmi/id')})")
    if imds.disabled():
        notes.append(f"IMDS disabled ({imds.DISABLED_ENV}=true)")
        return InstanceFacts(None, None, is_ec2=dmi.is_ec2, notes=tuple(notes), dmi=dmi)
    ans = _ask_imds(imds_budget)
    if ans.value:
        if root.explicit:
            notes.append("from IMDS: this is the RUNNING host, not necessarily the image "
                         "under --root")
        if ans.version == "v1":
            notes.append("IMDSv1 answered (token refused)")
        return InstanceFacts(ans.value, "imds", is_ec2=True, notes=tuple(notes), dmi=dmi)
    notes.append(ans.error or "IMDS gave no answer")
    return InstanceFacts(None, None, is_ec2=dmi.is_ec2, notes=tuple(notes), dmi=dmi)


def _ask_imds(budget: float) -> imds.IMDSAnswer:
    """IMDS's answer, or an error one: whatever a hostile or broken endpoint does (a bad header,
    a bad URL), it only means the instance type comes from elsewhere, never a crash."""
    try:
        return imds.query("instance-type", budget)
    except Exception as e:  # a probe's fault is a note, never doctor's crash
        from neuron_env.guards.text import clean

        return imds.IMDSAnswer(None, clean(f"IMDS could not be asked: {type(e).__name__}: {e}",
                                           one_line=True)[:200])
