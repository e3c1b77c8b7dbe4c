"""`neuron-env instance [TYPE]`: an instance type's Neuron facts (matrix, EC2, DLAMI)."""

from __future__ import annotations

import re
from typing import Any

from neuron_env.commands import TOOL
from neuron_env.errors import UsageError
from neuron_env.matrix import catalog
from neuron_env.matrix.dlami import dlami_choice
from neuron_env.matrix.model import family_of
from neuron_env.util.names import INSTANCE_TYPE

SCHEMA = "neuron-env.instance/1"
NEURON_NAME = re.compile(r"^(trn|inf)\d")  # the names Neuron families take
TYPE_RE = INSTANCE_TYPE


def dlami_parameter(m, os_name: str) -> str:
    return dlami_choice(m, os_name)[0]


def matrix_facts(m, t) -> dict:
    src = m.source_by_id(t.source)
    return {"devices": t.devices, "cores_per_device": t.cores_per_device,
            "memory_per_device_gib": t.memory_per_device_gib, "confirmed": t.confirmed,
            "lnc_default": t.lnc_default, "efa": t.efa, "source": src.url if src else None}


def run(type_: str | None, matrix: str | None, aws: bool, dlami: str | None,
        root: str | None = None) -> dict:
    m = catalog.select(matrix)
    source: str | None = "argument"
    if not type_:
        from neuron_env.probes.host import make_root
        from neuron_env.probes.instance import probe_instance

        inst = probe_instance(make_root(root), None)
        if not inst.type:
            raise UsageError("no instance type given and none detected (not on EC2?)",
                             hint="name one: neuron-env instance trn2.48xlarge")
        type_, source = inst.type, inst.source
    type_ = type_.strip().lower()
    if not TYPE_RE.match(type_):
        raise UsageError(f"{type_!r} is not an EC2 instance type",
                         hint="e.g. neuron-env instance trn2.48xlarge")
    fam, t = m.instance_type(type_)
    if fam is None and NEURON_NAME.match(family_of(type_)):  # trn9, inf7: a typo, not a fact
        known = ", ".join(f.family for f in m.instances)
        raise UsageError(f"{family_of(type_)} is not a Neuron instance family that Neuron "
                         f"{m.release} knows", hint=f"known families: {known}; e.g. "
                                                    "neuron-env instance trn2.48xlarge")
    doc: dict[str, Any] = {"schema": SCHEMA, "tool": TOOL, "matrix": {"release": m.release},
           "instance_type": type_, "source": source,
           "family": None if fam is None else {
               "name": fam.family, "supported": fam.supported, "accelerator": fam.accelerator,
               "reason": fam.reason},
           "matrix_facts": None if t is None else matrix_facts(m, t),
           "aws": None, "dlami": None, "warnings": [], "exit_code": 0}
    if fam is None:
        doc["warnings"].append(f"{family_of(type_)} is not a Neuron family in Neuron "
                               f"{m.release}'s matrix")
    elif t is None:
        doc["warnings"].append(f"{type_} is not a size the matrix knows for {fam.family}")
    if aws or dlami:
        _ask_aws(doc, m, type_, aws, dlami)
    return doc


def text(doc: dict) -> str:
    lines = [f"{doc['instance_type']} (Neuron {doc['matrix']['release']}, from "
             f"{doc['source']})"]
    f = doc["family"]
    if f:
        lines.append(f"  family {f['name']}: {'supported' if f['supported'] else 'NOT supported'}"
                     + (f" ({f['accelerator']})" if f["accelerator"] else "")
                     + (f" — {f['reason']}" if f["reason"] else ""))
    mf = doc["matrix_facts"]
    if mf:
        lines.append(f"  matrix: {mf['devices'] or '?'} devices × {mf['cores_per_device'] or '?'}"
                     f" cores, {mf['memory_per_device_gib'] or '?'} GiB per device"
                     + ("" if mf["confirmed"] else " (not confirmed)")
                     + (f", LNC {mf['lnc_default']} by default" if mf.get("lnc_default") else ""))
        if mf.get("source"):
            lines.append(f"  source: {mf['source']}")
    a = doc["aws"]
    if a:
        lines.append(f"  EC2:    {a['devices']} × {a['device_name']}, {a['cores_per_device']} "
                     f"cores (v{a['core_version']}), {a['memory_per_device_mib']} MiB per device")
    d = doc["dlami"]
    if d:
        lines.append(f"  DLAMI ({d['os']}): {d['image_id'] or 'unknown'}  [{d['parameter']}]")
    lines += [f"  warning: {w}" for w in doc["warnings"]]
    return "\n".join(lines) + "\n"


def _ask_aws(doc: dict, m, type_: str, aws: bool, dlami: str | None) -> None:
    """--aws: EC2's NeuronInfo; --dlami: the DLAMI's SSM parameter (failures are warnings)."""
    from neuron_env.aws import client as awsmod

    if aws:
        try:
            info = awsmod.describe_neuron_info(type_)
            doc["aws"] = None if info is None else {
                "devices": info.devices, "cores_per_device": info.cores_per_device,
                "core_version": info.core_version, "device_name": info.device_name,
                "memory_per_device_mib": info.memory_per_device_mib}
            if info is None:
                doc["warnings"].append(f"EC2 reports no NeuronInfo for {type_}")
        except awsmod.AwsError as e:
            doc["warnings"].append(f"EC2 could not be asked: {e.message}")
    if dlami:
        param, note = dlami_choice(m, dlami)
        if note:
            doc["warnings"].append(note)
        try:
            doc["dlami"] = {"os": dlami, "parameter": param,
                            "image_id": awsmod.get_parameter(param)}
        except awsmod.AwsError as e:
            doc["dlami"] = {"os": dlami, "parameter": param, "image_id": None}
            doc["warnings"].append(f"DLAMI parameter {param}: {e.message}")
