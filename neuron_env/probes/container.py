"""Is the host a container (docker, podman, Kubernetes)? Read under the root, never guessed."""

from __future__ import annotations

import os
import re

from neuron_env.probes.host import Root
from neuron_env.util.record import record

_CGROUP = re.compile(r"docker|kubepods|containerd|libpod|crio|lxc")
SERVICE_ACCOUNT = "var/run/secrets/kubernetes.io/serviceaccount"
# The Neuron OCI hook (package aws-neuronx-oci-hook): the runtime wrapper the container runtimes
# are pointed at, and the runtime configuration files AWS's tutorial edits, by runtime
# (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/tutorials/tutorial-oci-hook.html)
HOOK_WRAPPER = "opt/aws/neuron/bin/oci_neuron_hook_wrapper.sh"
RUNTIME_CONFIGS = (("docker", "etc/docker/daemon.json"),
                   ("containerd", "etc/containerd/config.toml"),
                   ("cri-o", "etc/crio/crio.conf"))


@record
class ContainerFacts:
    in_container: bool = False
    kind: str | None = None  # docker, podman, kubernetes, container
    evidence: tuple[str, ...] = ()
    uverbs_nodes: tuple[str, ...] = ()  # /dev/infiniband/uverbs* visible here
    runtimes: tuple[str, ...] = ()  # container runtimes with a configuration file under root
    hooked: tuple[str, ...] = ()  # ... whose configuration names the Neuron OCI hook wrapper
    hook_wrapper: bool = False  # the wrapper is there and executable (aws-neuronx-oci-hook)


def _uverbs(root: Root) -> tuple[str, ...]:
    try:
        return tuple(sorted(p.name for p in root.file("dev/infiniband").iterdir()
                            if p.name.startswith("uverbs")))
    except OSError:
        return ()


def _hook(root: Root) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(runtimes configured here, those that run the Neuron OCI hook wrapper, wrapper there):
    files read under the root only (correct on a read-only mount of a node's /)."""
    runtimes, hooked = [], []
    for name, rel in RUNTIME_CONFIGS:
        text = root.read(rel, limit=1 << 20)
        if text is None:
            continue
        runtimes.append(name)
        if "oci_neuron_hook_wrapper" in text:
            hooked.append(name)
    wrapper = root.file(HOOK_WRAPPER)
    return tuple(runtimes), tuple(hooked), wrapper.is_file() and os.access(wrapper, os.X_OK)


def probe_container(root: Root, env: dict[str, str] | None = None) -> ContainerFacts:
    evidence, kind = [], None
    if root.file(".dockerenv").exists():
        evidence.append("/.dockerenv")
        kind = "docker"
    if root.file("run/.containerenv").exists():
        evidence.append("/run/.containerenv")
        kind = kind or "podman"
    if root.file(SERVICE_ACCOUNT).is_dir():
        evidence.append("/" + SERVICE_ACCOUNT)
        kind = "kubernetes"
    if (env or {}).get("KUBERNETES_SERVICE_HOST"):
        evidence.append("KUBERNETES_SERVICE_HOST")
        kind = "kubernetes"
    cgroup = root.read("proc/1/cgroup", limit=64 << 10) or ""
    hit = _CGROUP.search(cgroup)
    if hit:
        evidence.append(f"/proc/1/cgroup ({hit.group(0)})")
        kind = kind or ("kubernetes" if hit.group(0) == "kubepods" else "container")
    return ContainerFacts(bool(evidence), kind, tuple(evidence), _uverbs(root), *_hook(root))
