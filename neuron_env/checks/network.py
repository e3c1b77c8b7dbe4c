"""net.efa: EFA devices, the libfabric provider, and (in a container) the uverbs nodes passed in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neuron_env.checks.driver import _image
from neuron_env.checks.registry import check, result
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts

EFA_DOCS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html"


def _skip(facts: HostFacts, typ: Any) -> str | None:
    if facts.instance.assumed or _image(facts):
        return "EFA of the target cannot be seen from this host or image"
    if not facts.instance.type:
        return "instance type unknown: EFA expectation unknown"
    if typ is None or typ.efa is None:
        return f"the matrix does not say whether {facts.instance.type} has EFA"
    if typ.efa is False:
        return f"{facts.instance.type} has no EFA"
    return None


WHEN = ("EFA matters only across nodes (multi-node training, collectives between instances); "
        "a single-node host does not need it")


def multi_node_intent(facts: Any, ctx: Any) -> str | None:
    """Why this host is meant to talk to other nodes (None: no sign of it): doctor
    --expect-efa (slurm-healthcheck's script passes it), or a Slurm job on more than one node."""
    if getattr(ctx, "expect_efa", False):
        return "--expect-efa"
    for name in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        value = facts.env.get(name)
        if value and value.strip().isdigit() and int(value) > 1:
            return f"{name}={value.strip()}"
    return None


def _missing(summary: str, intent: str | None, **kw: Any) -> Result:
    """No EFA at all: a failure with a multi-node intent, else a warning saying when it matters."""
    if intent is None:
        return result("net.efa", "warn", f"{summary}; {WHEN} (doctor --expect-efa makes "
                      "this a failure)", **kw)
    return result("net.efa", "fail", f"{summary} (multi-node intent: {intent})", **kw)


@check("net.efa", "net")
def net_efa(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """EFA devices and the libfabric efa provider, where the type has EFA."""
    typ = m.instance_type(facts.instance.type)[1] if facts.instance.type else None
    if (why := _skip(facts, typ)) is not None:
        return result("net.efa", "skip", why)
    e, c = facts.efa, facts.container
    intent = multi_node_intent(facts, ctx)
    observed = {"ib_devices": list(e.ib_devices), "uverbs": list(e.uverbs),
                "fi_info": e.fi_info_path, "efa_providers": e.fi_info_providers,
                "in_container": c.in_container, "multi_node": intent}
    if c.in_container and not e.uverbs:
        how = ("request vpc.amazonaws.com/efa in the pod's resources (the EFA device plugin)"
               if c.kind == "kubernetes" else
               "docker run --device=/dev/infiniband/uverbs0 … (one per EFA interface)")
        return _missing(f"no /dev/infiniband/uverbs* in this {c.kind or 'container'}: "
                        "EFA was not passed in, so multi-node collectives fall back or fail",
                        intent, observed=observed, fix=how, docs=EFA_DOCS)
    if not e.ib_devices and not e.uverbs:
        return _missing(f"no EFA devices on {facts.instance.type} (/sys/class/infiniband empty)",
                        intent, observed=observed,
                        fix="launch with EFA network interfaces (InterfaceType=efa) and install "
                            "the EFA driver (aws-efa-installer)", docs=EFA_DOCS)
    if not e.uverbs:
        return result("net.efa", "fail",
                      f"{len(e.ib_devices)} EFA device(s) but no /dev/infiniband/uverbs* nodes",
                      observed=observed, fix="sudo modprobe ib_uverbs (or reinstall the EFA "
                      "driver with aws-efa-installer)", docs=EFA_DOCS)
    return _provider(e, observed)


def _provider(e: Any, observed: dict[str, Any]) -> Result:
    n = len(e.uverbs)
    if e.fi_info_path and (e.fi_info_error or not e.fi_info_providers):
        return result("net.efa", "fail",
                      f"{n} uverbs node(s), but libfabric reports no efa provider"
                      + (f": {e.fi_info_error}" if e.fi_info_error else ""), observed=observed,
                      fix="reinstall libfabric with the EFA installer (aws-efa-installer)",
                      docs=EFA_DOCS)
    tail = (f"; fi_info: {e.fi_info_providers} efa provider entries" if e.fi_info_path else
            "; fi_info not found (libfabric provider not checked)")
    return result("net.efa", "pass", f"{n} EFA uverbs node(s){tail}", observed=observed)
