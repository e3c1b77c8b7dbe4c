"""container.devices: inside a container, the /dev/neuron* nodes passed in against what is asked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neuron_env.checks.driver import _not_neuron_host, install_fix, parse_core_list
from neuron_env.checks.registry import check, result
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts

K8S_RESOURCE = "aws.amazon.com/neuron"


def _requested(raw: str | None) -> tuple[set[int] | None, str | None]:
    """AWS_NEURON_VISIBLE_DEVICES: None (unset or ALL) or the device numbers; problem text."""
    if not raw or raw.strip().upper() == "ALL":
        return None, None
    got = parse_core_list(raw)
    if got is None:
        return None, f"AWS_NEURON_VISIBLE_DEVICES={raw!r} is not a device list such as '0-3'"
    return got, None


def _how_to_add(kind: str | None, devices: list[int]) -> str:
    flags = " ".join(f"--device=/dev/neuron{i}" for i in devices) or "--device=/dev/neuron0"
    if kind == "kubernetes":
        return (f"request the device-plugin resource in the pod spec: resources.limits "
                f"{K8S_RESOURCE}: {max(len(devices), 1)} (the Neuron device plugin mounts the "
                "nodes)")
    return f"docker run {flags} … (or configure the Neuron OCI hook for AWS_NEURON_VISIBLE_DEVICES)"


@check("container.devices", "container")
def container_devices(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """inside a container: the /dev/neuron* nodes passed in."""
    c = facts.container
    if not c.in_container:
        return result("container.devices", "skip", "not in a container")
    nodes = sorted(int(n[6:]) for n in facts.driver.device_nodes)
    raw = facts.env.get("AWS_NEURON_VISIBLE_DEVICES")
    wanted, bad = _requested(raw)
    cores_raw = facts.env.get("NEURON_RT_VISIBLE_CORES")
    observed = {"kind": c.kind, "evidence": list(c.evidence), "device_nodes": nodes,
                "AWS_NEURON_VISIBLE_DEVICES": raw, "NEURON_RT_VISIBLE_CORES": cores_raw}
    where = f"this {c.kind or 'container'} ({', '.join(c.evidence)})"
    if bad:
        return result("container.devices", "fail", bad, observed=observed,
                      fix="export AWS_NEURON_VISIBLE_DEVICES=0-3 (or ALL)")
    if wanted is not None and not set(wanted) <= set(nodes):
        missing = sorted(set(wanted) - set(nodes))
        return result("container.devices", "fail",
                      f"AWS_NEURON_VISIBLE_DEVICES={raw} but /dev/neuron"
                      f"{', /dev/neuron'.join(map(str, missing))} not in {where}: the variable "
                      "alone passes nothing without the Neuron OCI hook", observed=observed,
                      fix=_how_to_add(c.kind, missing))
    if not nodes:
        return result("container.devices", "fail",
                      f"no /dev/neuron* nodes in {where}", observed=observed,
                      fix=_how_to_add(c.kind, []))
    return _cores_fit(facts, m, observed, nodes, cores_raw, where)


def _cores_fit(facts: HostFacts, m: Matrix, observed: dict[str, Any], nodes: Any,
               cores_raw: Any, where: str) -> Result:
    typ = m.instance_type(facts.instance.type)[1] if facts.instance.type else None
    lnc_raw = facts.env.get("NEURON_LOGICAL_NC_CONFIG")
    lnc = int(lnc_raw) if lnc_raw in ("1", "2") else (typ.lnc_default if typ else None)
    per = typ.cores_per_device // lnc if typ and typ.cores_per_device and lnc else None
    cores = parse_core_list(cores_raw) if cores_raw else None
    if cores and per and max(cores) >= len(nodes) * per:
        need = max(cores) // per + 1
        return result("container.devices", "fail",
                      f"NEURON_RT_VISIBLE_CORES={cores_raw} needs {need} device(s); "
                      f"{where} has {len(nodes)}", observed=observed,
                      fix=_how_to_add(facts.container.kind, list(range(need))))
    return result("container.devices", "pass",
                  f"{len(nodes)} Neuron device node(s) passed into {where}", observed=observed)


HOOK_DOCS = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/tutorials/"
             "tutorial-oci-hook.html")
HOOK_WRAPPER = "/opt/aws/neuron/bin/oci_neuron_hook_wrapper.sh"


@check("container.hook", "container")
def container_hook(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """on a node: a container runtime set to the Neuron OCI hook has its wrapper installed."""
    c = facts.container
    if c.in_container:
        return result("container.hook", "skip", "inside a container: the node's runtime is "
                      "judged on the node (doctor --root /host)")
    if (why := _not_neuron_host(facts, m)) is not None:
        return result("container.hook", "skip", f"{why}: no Neuron devices to pass")
    observed = {"runtimes": list(c.runtimes), "hooked": list(c.hooked),
                "wrapper": c.hook_wrapper}
    if not c.runtimes:
        return result("container.hook", "skip", "no docker, containerd or cri-o configuration "
                      "under /etc", observed=observed)
    if c.hooked and not c.hook_wrapper:
        how = install_fix(facts, m, ["aws-neuronx-oci-hook"])
        return result("container.hook", "fail",
                      f"{' and '.join(c.hooked)} run(s) containers through {HOOK_WRAPPER}, "
                      "which is not installed (or not executable): containers do not start",
                      observed=observed, docs=HOOK_DOCS, **how)
    if c.hooked:
        return result("container.hook", "pass",
                      f"{' and '.join(c.hooked)} run(s) the Neuron OCI hook "
                      "(AWS_NEURON_VISIBLE_DEVICES passes devices)", observed=observed)
    return result("container.hook", "pass",
                  f"{', '.join(c.runtimes)} without the Neuron OCI hook: containers get "
                  "/dev/neuron* from the Neuron device plugin (Kubernetes) or --device, not "
                  "from AWS_NEURON_VISIBLE_DEVICES", observed=observed, docs=HOOK_DOCS)
