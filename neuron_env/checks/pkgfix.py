"""Fix lines for the host's own package manager: dnf/yum from Neuron's yum repository on rpm
hosts (Amazon Linux 2 and 2023, Rocky), apt from Neuron's apt repository on Ubuntu. Pure: facts
+ matrix -> text. A host is never told to use the other family's tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.checks import fixes
from neuron_env.util.template import sh

if TYPE_CHECKING:
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts

YUM_REPO = "https://yum.repos.neuron.amazonaws.com"
YUM_KEY = f"{YUM_REPO}/GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB"
RPM_FAMILY = ("amzn", "rocky", "rhel", "centos", "fedora", "almalinux")


def family(facts: HostFacts) -> str | None:
    """"rpm", "apt" or None: from the package database found first, else from os-release."""
    d = facts.driver
    if getattr(d, "manager", None) == "rpm":
        return "rpm"
    if d.dpkg_present:
        return "apt"
    o = facts.os
    ids = (o.id or "", *o.id_like)
    if any(i in RPM_FAMILY for i in ids):
        return "rpm"
    if any(i in ("ubuntu", "debian") for i in ids):
        return "apt"
    return None


def rpm_tool(facts: HostFacts) -> str:
    """yum on Amazon Linux 2 (its dnf is not the default), dnf elsewhere."""
    o = facts.os
    return "yum" if o.id == "amzn" and (o.version_id or "").split(".")[0] == "2" else "dnf"


def kernel_expr(facts: HostFacts) -> str:
    """The running kernel as a fix line names it: the fact when known (under --root the image's
    kernel, not this host's), else `$(uname -r)`."""
    k = facts.kernel.running if getattr(facts, "kernel", None) else None
    return k if k and facts.root.explicit else "$(uname -r)"


def rpm_specs(m: Matrix, names: list[str]) -> list[str]:
    """`name-VERSION*` where the release pins the component (dnf and yum take the glob)."""
    pins = {a.name: a.version for a in m.driver.apt}
    return [f"{n}-{pins[n]}*" if pins.get(n) else n for n in names]


def headers_pkgs(facts: HostFacts) -> list[str]:
    k = kernel_expr(facts)
    if family(facts) == "rpm":
        return [f"kernel-devel-{k}"]
    return [f"linux-headers-{k}"]


def _q(word: str) -> str:
    return f'"{word}"' if "$(" in word else sh(word)


def install(facts: HostFacts, m: Matrix, names: list[str], headers: bool = False) -> str:
    """Install `names` at the release's versions with the host's own tool."""
    pre = headers_pkgs(facts) if headers else []
    if family(facts) == "rpm":
        tool = rpm_tool(facts)
        return f"sudo {tool} install -y " + " ".join(_q(p) for p in pre + rpm_specs(m, names))
    held = set(getattr(facts.driver, "held", ())) & set(names)
    # a held package (the DLAMIs hold the driver) makes `apt-get install -y` refuse: "Held
    # packages were changed and -y was used without --allow-change-held-packages"
    flags = "-y --allow-change-held-packages" if held else "-y"
    cmd = fixes.apt_get_install(m, names, flags)
    if not pre:
        return cmd
    return cmd.replace(f"install {flags} ", f"install {flags} {' '.join(map(_q, pre))} ", 1)


def remove(facts: HostFacts, names: list[str]) -> str:
    if family(facts) == "rpm":
        return f"sudo {rpm_tool(facts)} remove -y " + " ".join(names)
    return "sudo apt-get remove -y --purge " + " ".join(names)


def reinstall(facts: HostFacts, names: list[str]) -> str:
    if family(facts) == "rpm":
        return f"sudo {rpm_tool(facts)} reinstall -y " + " ".join(names)
    return "sudo apt-get install --reinstall -y " + " ".join(names)


def yum_repo_setup() -> str:
    """Neuron's yum repository, as its setup guides write /etc/yum.repos.d/neuron.repo."""
    lines = ["[neuron]", "name=Neuron YUM Repository", f"baseurl={YUM_REPO}", "enabled=1",
             "metadata_expire=0"]
    return (f"printf '%s\\n' {' '.join(sh(x) for x in lines)} | sudo tee "
            f"/etc/yum.repos.d/neuron.repo >/dev/null && sudo rpm --import {YUM_KEY}")


def rpm_install_with_repo(facts: HostFacts, m: Matrix, names: list[str] | None = None) -> str:
    """The repository, then the packages (the release's whole driver set when names is None),
    with kernel-devel for the running kernel when the driver is among them."""
    pkgs = names if names is not None else [a.name for a in m.driver.apt]
    return yum_repo_setup() + " && " + install(facts, m, pkgs,
                                               headers="aws-neuronx-dkms" in pkgs)
