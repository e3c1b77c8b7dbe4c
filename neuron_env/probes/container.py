"""Is the host a container (docker, podman, Kubernetes)? Read under the root, never guessed."""

from __future__ import annotations

import re

from neuron_env.probes.host import Root
from neuron_env.util.record import record

_CGROUP = re.compile(r"docker|kubepods|containerd|libpod|crio|lxc")
SERVICE_ACCOUNT = "var/run/secrets/kubernetes.io/serviceaccount"


@record
class ContainerFacts:
    in_container: bool = False
    kind: str | None = None  # docker, podman, kubernetes, container
    evidence: tuple[str, ...] = ()
    uverbs_nodes: tuple[str, ...] = ()  # /dev/infiniband/uverbs* visible here


def _uverbs(root: Root) -> tuple[str, ...]:
    try:
        return tuple(sorted(p.name for p in root.file("dev/infiniband").iterdir()
                            if p.name.startswith("uverbs")))
    except OSError:
        return ()


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
    return ContainerFacts(bool(evidence), kind, tuple(evidence), _uverbs(root))
