"""Gather every fact doctor judges: the only place the probes are called together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.probes.cache import CacheDir, probe_cache
from neuron_env.probes.container import ContainerFacts, probe_container
from neuron_env.probes.efa import EfaFacts, probe_efa
from neuron_env.probes.environ import EnvFacts, probe_env
from neuron_env.probes.holders import Holder, probe_holders
from neuron_env.probes.host import DriverFacts, OSFacts, Root, probe_arch, probe_driver, probe_os
from neuron_env.probes.instance import InstanceFacts, probe_instance
from neuron_env.probes.interpreter import TargetFacts, finish_probe, start_probe
from neuron_env.probes.kernel import KernelFacts, probe_kernel
from neuron_env.probes.limits import LimitFacts, probe_limits
from neuron_env.probes.neuron_ls import NeuronLsFacts, probe_neuron_ls
from neuron_env.probes.tools import ToolsFacts, image_path, probe_tools
from neuron_env.util.record import factory, record

if TYPE_CHECKING:
    from neuron_env.probes.aws_facts import AwsFacts
    from neuron_env.probes.elfneeds import LibFacts


@record
class HostFacts:
    root: Root
    instance: InstanceFacts
    os: OSFacts
    arch: str | None
    arch_source: str
    target: TargetFacts
    driver: DriverFacts
    neuron_ls: NeuronLsFacts | None  # None under --root: it would describe the real host
    aws: AwsFacts | None = None  # with --aws
    pythons: tuple[tuple[str, str], ...] = ()  # (path, X.Y) found on the host (fix lines)
    uv: str | None = None  # uv on PATH (fix lines)
    env: EnvFacts = factory(EnvFacts)
    container: ContainerFacts = factory(ContainerFacts)
    efa: EfaFacts = factory(EfaFacts)
    tools: ToolsFacts | None = None  # None: not probed
    cache: tuple[CacheDir, ...] | None = None  # None: not probed
    holders: tuple[Holder, ...] = ()  # processes neuron-ls lists on the NeuronCores
    companions: object | None = None  # probes.companions.CompanionImports; None: not probed
    kernel: KernelFacts = factory(KernelFacts)  # running kernel, DKMS trees, neuron.ko per kernel
    limits: LimitFacts = factory(LimitFacts)  # open files and locked memory a job inherits
    libs: LibFacts | None = None  # neuronx-cc's shared-library needs; None: not installed

    def serialize(self) -> dict:
        t = self.target
        return {
            "root": str(self.root.path),
            "instance": {"type": self.instance.type, "source": self.instance.source,
                         "assumed": self.instance.assumed, "is_ec2": self.instance.is_ec2,
                         "instance_id": self.instance.instance_id,
                         "notes": list(self.instance.notes)},
            "os": {"id": self.os.id, "version_id": self.os.version_id,
                   "codename": self.os.codename, "pretty_name": self.os.pretty_name,
                   "source": self.os.source, "error": self.os.error},
            "arch": {"machine": self.arch, "source": self.arch_source},
            "interpreter": {"path": t.path, "chosen_by": t.chosen_by, "version": t.version,
                            "executable": t.executable, "prefix": t.prefix, "venv": t.venv,
                            "error": t.error, "manifest": t.manifest_path if t.manifest else None},
            "packages": {d.name: d.version for d in sorted(t.dists.values(),
                                                           key=lambda d: d.name.lower())},
            "driver": {"module_version": self.driver.module_version,
                       "device_nodes": list(self.driver.device_nodes),
                       "apt_packages": dict(self.driver.packages),
                       "package_manager": self.driver.manager,
                       "package_states": dict(self.driver.states)},
            "kernel": {"running": self.kernel.running, "source": self.kernel.source,
                       "with_module": list(self.kernel.with_module),
                       "with_headers": list(self.kernel.with_headers)},
            "limits": {"nofile": [self.limits.nofile_soft, self.limits.nofile_hard],
                       "memlock": [self.limits.memlock_soft, self.limits.memlock_hard],
                       "source": self.limits.source},
            "neuron_ls": None if self.neuron_ls is None else {
                "path": self.neuron_ls.path, "error": self.neuron_ls.error,
                "args": self.neuron_ls.args,
                "devices": None if self.neuron_ls.devices is None else len(self.neuron_ls.devices)},
            "container": {"in_container": self.container.in_container,
                          "kind": self.container.kind,
                          "evidence": list(self.container.evidence)},
            "efa": {"ib_devices": list(self.efa.ib_devices), "uverbs": list(self.efa.uverbs),
                    "fi_info_providers": self.efa.fi_info_providers},
        }


def gather(root: Root, python: str | None, instance_type: str | None,
           want_neuron_ls: bool = True, started=None, environ=None,
           want_companions: bool = False) -> HostFacts:
    # the slowest probe (a subprocess in the target) runs while the others read the host
    target = started or start_target(python)
    arch, arch_source = probe_arch(root)
    instance = probe_instance(root, instance_type)
    os_facts = probe_os(root)
    driver = probe_driver(root)
    neuron_ls = probe_neuron_ls() if want_neuron_ls and not root.explicit else None
    env = probe_env(environ)
    # under --root the image's own PATH counts, and this process's environment says nothing
    # about the image's container-ness
    path = image_path(root) if root.explicit else env.get("PATH", "")
    from neuron_env.probes.pythons import find_pythons, find_pythons_in, find_uv, find_uv_in

    # under --root the fix lines name the image's interpreters, never the real host's
    pythons = find_pythons_in(root, path or "") if root.explicit else find_pythons()
    uv = find_uv_in(root, path or "") if root.explicit else find_uv()

    tgt = _finish(target)
    # a child importing torch, only when a companion is installed; the rest runs meanwhile
    from neuron_env.probes import companions as comp

    importing = comp.start_companions(tgt) if want_companions else None
    facts = HostFacts(root=root, instance=instance, os=os_facts, arch=arch,
                      arch_source=arch_source, target=tgt, driver=driver,
                      neuron_ls=neuron_ls, env=env,
                      container=probe_container(root, None if root.explicit else env.vars),
                      efa=probe_efa(root, path), cache=probe_cache(root, env.vars),
                      tools=probe_tools(root, path, tgt.prefix if tgt.usable else None),
                      holders=probe_holders(root, neuron_ls.devices if neuron_ls else None),
                      pythons=pythons, uv=uv, kernel=probe_kernel(root),
                      limits=probe_limits(root), libs=_libs(root, tgt, arch, env.vars))
    if importing is None:
        return facts
    from neuron_env.util.record import replace

    return replace(facts, companions=comp.finish_companions(importing))


def _libs(root: Root, tgt: TargetFacts, arch: str | None, env: dict[str, str]):
    """neuronx-cc's shared-library needs, when the target has it installed."""
    cc = tgt.dist("neuronx-cc") if tgt.usable else None
    if cc is None or not cc.location:
        return None
    from pathlib import Path

    from neuron_env.probes.elfneeds import probe_libs

    return probe_libs(root, str(Path(cc.location).parent / "neuronxcc"), "neuronx-cc", arch,
                      env.get("LD_LIBRARY_PATH"))


def start_target(python: str | None):
    """The target probe, started (finish it with gather); an interpreter that does not exist is
    a TargetFacts with the error: a failing python.version result like a broken one."""
    from neuron_env.errors import InterpreterError

    try:
        return start_probe(python)
    except InterpreterError as e:
        return TargetFacts(path=python or "python3", chosen_by="--python" if python else
                           "default", error=e.message + (f" ({e.hint})" if e.hint else ""))


def _finish(target) -> TargetFacts:
    """A started probe, or the TargetFacts of an interpreter that could not be started."""
    return target if isinstance(target, TargetFacts) else finish_probe(*target)
