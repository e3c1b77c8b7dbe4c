"""Build HostFacts directly (no I/O) for pure check tests."""

from __future__ import annotations

from pathlib import Path

from neuron_env.probes.facts import HostFacts
from neuron_env.probes.host import DeviceInfo, DriverFacts, OSFacts, Root
from neuron_env.probes.instance import InstanceFacts
from neuron_env.probes.interpreter import Dist, TargetFacts
from neuron_env.probes.neuron_ls import NeuronLsFacts
from neuron_env.util.names import canonicalize_name

UBUNTU = {"26.04": "resolute", "24.04": "noble", "22.04": "jammy"}
GOOD = {"torch": "2.14.0+cpu", "torch-neuronx": "2.14.3.0.1711", "neuronx-cc": "2.28.7.0",
        "nki": "0.7.0"}
APT = {"aws-neuronx-dkms": "2.30.2.0", "aws-neuronx-runtime-lib": "2.34.10.0",
       "aws-neuronx-collectives": "2.34.10.0", "aws-neuronx-tools": "2.32.28.0"}


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
         module: str | None = "2.30.2.0", apt: dict | None = None, dpkg: bool = True,
         neuron_ls: NeuronLsFacts | None = None, root_explicit: bool = False,
         os_error: str | None = None) -> HostFacts:
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
        neuron_ls=neuron_ls,
    )
