"""Build HostFacts directly (no I/O) for pure check tests."""

from __future__ import annotations

from pathlib import Path

from neuron_env.probes.cache import CacheDir
from neuron_env.probes.container import ContainerFacts
from neuron_env.probes.efa import EfaFacts
from neuron_env.probes.environ import EnvFacts
from neuron_env.probes.facts import HostFacts
from neuron_env.probes.host import DeviceInfo, DriverFacts, OSFacts, Root
from neuron_env.probes.instance import InstanceFacts
from neuron_env.probes.interpreter import Dist, TargetFacts
from neuron_env.probes.neuron_ls import NeuronLsFacts
from neuron_env.probes.tools import ToolsFacts
from neuron_env.util.names import canonicalize_name

UBUNTU = {"26.04": "resolute", "24.04": "noble", "22.04": "jammy"}
GOOD = {"torch": "2.14.0+cpu", "torch-neuronx": "2.14.3.0.1711", "neuronx-cc": "2.28.7.0",
        "nki": "0.7.0"}
# Neuron 2.33's component versions (the 2.33 matrix); APT_232 is the previous release's set
APT = {"aws-neuronx-dkms": "2.31.7.0", "aws-neuronx-runtime-lib": "2.35.30.0-5e3a1b2c4",
       "aws-neuronx-collectives": "2.35.43.0-8f1d2e3a7", "aws-neuronx-tools": "2.33.38.0"}
APT_232 = {"aws-neuronx-dkms": "2.30.2.0", "aws-neuronx-runtime-lib": "2.34.10.0",
           "aws-neuronx-collectives": "2.34.10.0", "aws-neuronx-tools": "2.32.28.0"}
GIB = 1 << 30


def target(packages: dict[str, str] | None = None, version: str = "3.12.4", *,
           error: str | None = None, manifest: dict | None = None, marker: set | None = None,
           direct: dict | None = None, broken: tuple = ()) -> TargetFacts:
    pk = GOOD if packages is None else packages
    dists = {canonicalize_name(n): Dist(n, v, (direct or {}).get(n), "/venv/site",
                                         n in (marker or set())) for n, v in pk.items()}
    if error:
        return TargetFacts("/venv/bin/python", "--python", error=error)
    return TargetFacts("/venv/bin/python", "--python", version=version,
                       executable="/venv/bin/python", prefix="/venv", venv=True,
                       machine="x86_64", dists=dists, broken=broken, manifest=manifest,
                       manifest_path="/venv/.neuron-env/install-manifest.json" if manifest
                       else None)


def host(*, instance: str | None = "trn2.48xlarge", source: str | None = "dmi",
         assumed: bool = False, os_id: str = "ubuntu", os_version: str = "26.04",
         arch: str | None = "x86_64", tgt: TargetFacts | None = None, devices: int = 16,
         module: str | None = "2.31.7.0", apt: dict | None = None, dpkg: bool = True,
         neuron_ls: NeuronLsFacts | None = None, root_explicit: bool = False,
         os_error: str | None = None, env: dict | None = None,
         container: ContainerFacts | None = None, efa: EfaFacts | None = None,
         tools: ToolsFacts | None = None, cache: tuple | None = None,
         holders: tuple = ()) -> HostFacts:
    inst = InstanceFacts(instance, source if instance else None, assumed=assumed,
                         is_ec2=True if instance else None,
                         notes=() if instance else ("no DMI", "IMDS disabled"))
    osf = OSFacts(error=os_error) if os_error else OSFacts(
        os_id, os_version, UBUNTU.get(os_version), f"{os_id.title()} {os_version}")
    nodes = tuple(f"neuron{i}" for i in range(devices))
    return HostFacts(
        root=Root(Path("/mnt/img") if root_explicit else Path("/"), root_explicit),
        instance=inst, os=osf, arch=arch, arch_source="uname",
        target=tgt if tgt is not None else target(),
        driver=DriverFacts(module, nodes, tuple(DeviceInfo(n, 8) for n in nodes),
                           dict(APT if apt is None else apt), dpkg, not root_explicit),
        neuron_ls=neuron_ls, env=EnvFacts(dict(env or {})),
        container=container or ContainerFacts(),
        efa=efa if efa is not None else EfaFacts(("rdmap0s0",), ("uverbs0",)),
        tools=tools if tools is not None else tools_on_path(),
        cache=cache if cache is not None else (cache_dir(),), holders=holders,
    )


def tools_on_path(**override) -> ToolsFacts:
    on_path = {"neuron-ls": "/opt/aws/neuron/bin/neuron-ls",
               "neuron-top": "/opt/aws/neuron/bin/neuron-top",
               "neuronx-cc": "/venv/bin/neuronx-cc"}
    on_path.update(override)
    return ToolsFacts(on_path, {"neuron-ls": True, "neuron-top": True, "neuronx-cc": False},
                      {"neuron-ls": None, "neuron-top": None, "neuronx-cc": "/venv/bin/neuronx-cc"},
                      "/venv/bin:/opt/aws/neuron/bin:/usr/bin")


def cache_dir(**kw) -> CacheDir:
    args = dict(var="TORCH_NEURONX_DEBUG_DIR", path="/tmp/neuron_backend", from_env=False,
                exists=True, is_dir=True, writable=True, free_bytes=100 * GIB)
    args.update(kw)
    return CacheDir(**args)
