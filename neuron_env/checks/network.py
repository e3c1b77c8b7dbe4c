"""net.efa: EFA devices, the libfabric provider, and (in a container) the uverbs nodes passed in."""

from __future__ import annotations

from neuron_env.checks import Context, check
from neuron_env.checks.driver import _image
from neuron_env.report.model import Result

EFA_DOCS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html"


def _skip(facts, typ) -> str | None:
    if facts.instance.assumed or _image(facts):
        return "EFA of the target cannot be seen from this host or image"
    if not facts.instance.type:
        return "instance type unknown: EFA expectation unknown"
    if typ is None or typ.efa is None:
        return f"the matrix does not say whether {facts.instance.type} has EFA"
    if typ.efa is False:
        return f"{facts.instance.type} has no EFA"
    return None


SINGLE_NODE = ("; a single node needs no EFA (only collectives across nodes use it): this fails "
               "with --expect-efa or in a Slurm job across nodes")


def _missing(ctx: Context, summary: str, observed: dict, fix: str) -> Result:
    """No EFA at all: a failure where multi-node work is meant, else a warning that says when it
    matters (a trn2.48xlarge used alone legitimately has none)."""
    intent = ctx.multi_node
    if intent:
        return Result("net.efa", "net", "fail", f"{summary} ({intent}: multi-node collectives "
                      "need EFA)", observed=dict(observed, multi_node=intent), fix=fix,
                      docs=EFA_DOCS)
    return Result("net.efa", "net", "warn", summary + SINGLE_NODE,
                  observed=dict(observed, multi_node=None), fix=fix, docs=EFA_DOCS)


@check("net.efa", "net")
def net_efa(facts, m, ctx) -> Result:
    typ = m.instance_type(facts.instance.type)[1] if facts.instance.type else None
    if (why := _skip(facts, typ)) is not None:
        return Result("net.efa", "net", "skip", why)
    e, c = facts.efa, facts.container
    observed = {"ib_devices": list(e.ib_devices), "uverbs": list(e.uverbs),
                "fi_info": e.fi_info_path, "efa_providers": e.fi_info_providers,
                "in_container": c.in_container}
    if c.in_container and not e.uverbs:
        how = ("request vpc.amazonaws.com/efa in the pod's resources (the EFA device plugin)"
               if c.kind == "kubernetes" else
               "docker run --device=/dev/infiniband/uverbs0 … (one per EFA interface)")
        return _missing(ctx, f"no /dev/infiniband/uverbs* in this {c.kind or 'container'}: EFA "
                        "was not passed in, so multi-node collectives fall back or fail",
                        observed, how)
    if not e.ib_devices and not e.uverbs:
        return _missing(ctx, f"no EFA devices on {facts.instance.type} (/sys/class/infiniband "
                        "empty)", observed, "launch with EFA network interfaces "
                        "(InterfaceType=efa) and install the EFA driver (aws-efa-installer)")
    if not e.uverbs:
        return Result("net.efa", "net", "fail",
                      f"{len(e.ib_devices)} EFA device(s) but no /dev/infiniband/uverbs* nodes",
                      observed=observed, fix="sudo modprobe ib_uverbs (or reinstall the EFA "
                      "driver with aws-efa-installer)", docs=EFA_DOCS)
    return _provider(e, observed)


def _provider(e, observed) -> Result:
    n = len(e.uverbs)
    if e.fi_info_path and (e.fi_info_error or not e.fi_info_providers):
        return Result("net.efa", "net", "fail",
                      f"{n} uverbs node(s), but libfabric reports no efa provider"
                      + (f": {e.fi_info_error}" if e.fi_info_error else ""), observed=observed,
                      fix="reinstall libfabric with the EFA installer (aws-efa-installer)",
                      docs=EFA_DOCS)
    tail = (f"; fi_info: {e.fi_info_providers} efa provider entries" if e.fi_info_path else
            "; fi_info not found (libfabric provider not checked)")
    return Result("net.efa", "net", "pass", f"{n} EFA uverbs node(s){tail}", observed=observed)
