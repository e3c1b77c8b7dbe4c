"""No pass without a fact: EVERY registered check is walked down its pass path (facts built for
it) and its pass must rest on what it observed: `observed` set, no "unknown" in the message.
A new check without a pass case here fails the walk."""

from __future__ import annotations

import re

import pytest

from neuron_env import checks
from neuron_env.aws.client import NeuronInfo
from neuron_env.aws.facts import AwsFacts
from neuron_env.matrix import catalog
from neuron_env.probes.companions import CompanionImports
from neuron_env.probes.container import ContainerFacts
from neuron_env.probes.elfneeds import LibFacts
from neuron_env.probes.kernel import KernelFacts
from neuron_env.probes.limits import UNLIMITED, LimitFacts
from neuron_env.probes.neuron_ls import NeuronLsFacts
from neuron_env.util.record import replace
from tests.helpers.facts import APT, GOOD, host, target

M = catalog.select(None)
CTX = checks.Context(python_flag="/venv/bin/python")


def neuron_ls(devices: int = 16, nc: int = 4, lnc: int = 2) -> NeuronLsFacts:
    return NeuronLsFacts("/opt/aws/neuron/bin/neuron-ls", tuple(
        {"neuron_device": i, "nc_count": nc, "logical_neuroncore_config": lnc,
         "neuron_processes": []} for i in range(devices)))


def _pair_version() -> str:
    """A torch-neuronx build of the default matrix's pair for GOOD's torch (the walk follows
    the default release, whatever it is)."""
    pair = next(p for p in M.pairs if GOOD["torch"].startswith(p.torch_minor + "."))
    v = re.search(r"\d+(\.\d+)*", str(pair.torch_neuronx))
    assert v, pair
    return v.group(0) + ".1802"


PACKAGES = {**GOOD, "torch-neuronx": _pair_version()}


def healthy(**kw):
    # the release's pinned versions; a package it names without a version takes the helpers'
    apt = {a.name: a.version or APT[a.name] for a in M.driver.apt if a.version or a.name in APT}
    return host(apt=apt, neuron_ls=neuron_ls(), tgt=target(PACKAGES), **kw)


def with_companions():
    minor = ".".join(GOOD["torch"].split(".")[:2])
    rows = []
    for c in (c for c in M.torch_companions if c.torch == minor):
        # never two that must not sit side by side (TorchAO Neuron provides torchao itself),
        # nor one limited to other instance families than the host's (trn2)
        if c.families and "trn2" not in c.families:
            continue
        if any(c.name in r.conflicts or r.name in c.conflicts for r in rows):
            continue
        rows.append(c)
    if not rows:
        pytest.skip(f"the matrix pairs no companion with torch {minor}")
    pk = dict(PACKAGES)
    for c in rows:
        v = re.search(r"[\d.]+", str(c.requirement).split(c.name, 1)[1])
        assert v, c.requirement
        base = v.group(0).rstrip(".")
        pk[c.name] = base + ("" if base.count(".") >= 2 else ".0") + "+cpu"
    mods = dict.fromkeys(c.name for c in rows)
    return replace(host(tgt=target(pk)), companions=CompanionImports(
        torch_version=GOOD["torch"], modules=mods, seconds=0.5))


def in_container():
    return host(container=ContainerFacts(True, "docker", ("/.dockerenv",)))


def with_aws():
    typ = M.instance_type("trn2.48xlarge")[1]
    info = NeuronInfo("trn2.48xlarge", typ.devices, typ.cores_per_device, 3,
                      (typ.memory_per_device_gib or 96) * 1024, "Trainium2", None)
    return replace(host(), aws=AwsFacts(info, None, True))


XLA = catalog.select("2.31.1")  # the native releases' matrices list no [[stack]]


def xla_stack():
    """A trn1 host with Neuron 2.31.1's own Python stack (backend.stack reads XLA matrices)."""
    pair = XLA.pairs[0]
    pkgs = {"torch": str(pair.torch), "torch-neuronx": str(pair.torch_neuronx)[2:]}
    pkgs |= {r.name: r.version for r in XLA.stack}
    return host(instance="trn1.32xlarge", tgt=target(pkgs))


def with_numpy():
    """neuronx-cc declaring its numpy range (Requires-Dist), numpy inside it."""
    from neuron_env.probes.interpreter import Dist

    facts = healthy()
    t = facts.target
    cc = t.dist("neuronx-cc")
    dists = {**t.dists, "neuronx-cc": replace(cc, requires_pinned=("numpy (<=1.25.2,>=1.24.3)",)),
             "numpy": Dist("numpy", "1.25.2")}
    return replace(facts, target=replace(t, dists=dists))


def with_kernel():
    return replace(healthy(), kernel=KernelFacts("6.8.0-1015-aws", "uname -r",
                                                 ("6.8.0-1015-aws",), ("6.8.0-1015-aws",)))


def with_limits():
    return replace(healthy(), limits=LimitFacts(65535, 1048576, UNLIMITED, UNLIMITED,
                                                "this process"))


def with_libs():
    return replace(healthy(), libs=LibFacts("neuronx-cc", files=3))


def container_without_driver():
    return replace(in_container(), driver=replace(in_container().driver, packages={}))


def with_oci_hook(wrapper: bool = True, hooked: tuple[str, ...] = ("containerd",)):
    h = healthy()
    return replace(h, container=replace(h.container, runtimes=("containerd",), hooked=hooked,
                                        hook_wrapper=wrapper))


PASS_FACTS = {"container.hook": with_oci_hook,
              "backend.companions": with_companions, "container.devices": in_container,
              "instance.aws": with_aws, "backend.stack": xla_stack, "backend.pins": with_numpy,
              "driver.dkms": with_kernel, "os.limits": with_limits,
              "os.libs": with_libs, "container.driver": container_without_driver}
PASS_MATRIX = {"backend.stack": XLA}


IDS = [c.id for c in checks.registered() if c.fn]  # those doctor runs (not the device steps)


@pytest.mark.parametrize("cid", IDS)
def test_every_check_passes_only_on_what_it_observed(cid):
    facts = PASS_FACTS.get(cid, healthy)()
    r = checks.run_checks(facts, PASS_MATRIX.get(cid, M), CTX, [cid])[0]
    assert r.status == "pass", f"{cid}: no pass path from these facts: {r.summary}"
    assert r.observed is not None, f"{cid} passed without recording what it observed"
    assert "unknown" not in r.summary.lower(), r.summary


def test_the_walk_covers_every_registered_check():
    assert set(IDS) >= set(checks.all_ids()) | {"instance.aws"}


def test_cores_counted_from_the_instance_type_alone_do_not_pass():
    """A Trn2 host with no driver and no device: 64 cores are expected, none seen."""
    r = checks.run_checks(host(devices=0, module=None), M, CTX, ["driver.cores"])[0]
    assert r.status == "skip" and "none seen" in r.summary and "no Neuron device" in r.summary


@pytest.mark.parametrize("facts", [
    lambda: host(instance="trn2.3xlarge"), lambda: host(instance="trn9.48xlarge"),
    lambda: host(devices=0, module=None, apt={}), lambda: host(neuron_ls=None),
    lambda: host(instance=None, source=None)])
def test_no_pass_says_unknown_on_other_hosts(facts):
    for r in checks.run_checks(facts(), M, CTX, IDS):
        if r.status == "pass":
            assert "unknown" not in r.summary.lower(), (r.id, r.summary)
            assert r.observed is not None, r.id


def test_container_hook_fails_a_runtime_set_to_a_wrapper_that_is_not_there():
    r = checks.run_checks(with_oci_hook(wrapper=False), M, CTX, ["container.hook"])[0]
    assert r.status == "fail" and "oci_neuron_hook_wrapper.sh" in r.summary
    assert "aws-neuronx-oci-hook" in (r.fix or "")
    plain = checks.run_checks(with_oci_hook(wrapper=False, hooked=()), M, CTX,
                              ["container.hook"])[0]
    assert plain.status == "pass" and "device plugin" in plain.summary
