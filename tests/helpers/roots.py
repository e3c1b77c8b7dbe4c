"""Fixture roots that look like real hosts: Ubuntu/Debian/Amazon Linux, trn1/trn2/trn3, non-EC2."""

from __future__ import annotations

import struct
from pathlib import Path

OS_RELEASE = {
    "ubuntu-26.04": """PRETTY_NAME="Ubuntu 26.04 LTS"
NAME="Ubuntu"
VERSION_ID="26.04"
VERSION="26.04 LTS (Resolute Raccoon)"
VERSION_CODENAME=resolute
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
UBUNTU_CODENAME=resolute
LOGO=ubuntu-logo
""",
    "ubuntu-24.04": """PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.1 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
""",
    "ubuntu-22.04": """PRETTY_NAME="Ubuntu 22.04.5 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.5 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
""",
    "debian-12": """PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
""",
    "amzn-2023": """NAME="Amazon Linux"
VERSION="2023"
ID="amzn"
ID_LIKE="fedora"
VERSION_ID="2023"
PLATFORM_ID="platform:al2023"
PRETTY_NAME="Amazon Linux 2023.6.20241010"
ANSI_COLOR="0;33"
""",
}

DPKG_NEURON = {
    "aws-neuronx-dkms": "2.30.2.0",
    "aws-neuronx-runtime-lib": "2.34.10.0-0e2a8f4ad",
    "aws-neuronx-collectives": "2.34.10.0-6a09eac63",
    "aws-neuronx-tools": "2.32.28.0",
}


# Neuron 2.33's component versions (dpkg adds a build suffix to some)
DPKG_NEURON_233 = {
    "aws-neuronx-dkms": "2.31.7.0",
    "aws-neuronx-runtime-lib": "2.35.30.0-5e3a1b2c4",
    "aws-neuronx-collectives": "2.35.43.0-8f1d2e3a7",
    "aws-neuronx-tools": "2.33.38.0",
}


def elf_header(machine: int = 0x3E) -> bytes:
    """The first 20 bytes of a little-endian ELF64 executable for `machine`."""
    return b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8 + struct.pack("<HH", 2, machine)


def dpkg_status(packages: dict[str, str]) -> str:
    base = {"base-files": "13ubuntu10", "python3": "3.12.3-0ubuntu2"}
    stanzas = []
    for name, ver in {**base, **packages}.items():
        stanzas.append(f"Package: {name}\nStatus: install ok installed\nPriority: optional\n"
                       f"Architecture: amd64\nVersion: {ver}\nDescription: {name}\n"
                       " a package\n")
    return "\n".join(stanzas)


def make_root(base: Path, *, os: str | None = "ubuntu-24.04", instance: str | None = None,
              vendor: str | None = "Amazon EC2", devices: int = 0, driver: str | None = None,
              packages: dict[str, str] | None = None, arch: int = 0x3E, cores: int = 8,
              os_release_text: str | None = None, live: bool = True) -> Path:
    """Build a host root. `instance=None` with vendor set writes a DMI without product name;
    `live=False` makes a mounted image (no sys/)."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "etc").mkdir(exist_ok=True)
    if os_release_text is not None:
        (base / "etc/os-release").write_text(os_release_text)
    elif os:
        (base / "usr/lib").mkdir(parents=True, exist_ok=True)
        (base / "usr/lib/os-release").write_text(OS_RELEASE[os])
        (base / "etc/os-release").symlink_to("../usr/lib/os-release")
    (base / "usr/bin").mkdir(parents=True, exist_ok=True)
    (base / "usr/bin/env").write_bytes(elf_header(arch) + b"\0" * 44)
    if vendor:
        dmi = base / "sys/devices/virtual/dmi/id"
        dmi.mkdir(parents=True)
        (dmi / "sys_vendor").write_text(vendor + "\n")
        if instance:
            (dmi / "product_name").write_text(instance + "\n")
            (dmi / "board_asset_tag").write_text("i-0123456789abcdef0\n")
    if live:  # a running host's sysfs; a mounted image has none
        (base / "sys/module").mkdir(parents=True, exist_ok=True)
    (base / "dev").mkdir(exist_ok=True)
    (base / "dev/null").write_text("")
    for i in range(devices):
        (base / f"dev/neuron{i}").write_text("")
        d = base / f"sys/devices/virtual/neuron_device/neuron{i}"
        (d / "info/architecture").mkdir(parents=True)
        (d / "core_count").write_text(f"{cores}\n")
        (d / "info/architecture/arch_type").write_text("NCv3\n")
        (d / "info/architecture/device_name").write_text("Trainium2\n")
        if instance:
            (d / "info/architecture/instance_type").write_text(instance + "\n")
    if driver:
        (base / "sys/module/neuron").mkdir(parents=True)
        (base / "sys/module/neuron/version").write_text(driver + "\n")
    if packages is not None:
        (base / "var/lib/dpkg").mkdir(parents=True)
        (base / "var/lib/dpkg/status").write_text(dpkg_status(packages))
    return base


def trn2_host(base: Path, **kw) -> Path:
    """A healthy Neuron 2.33 trn2.48xlarge: driver, tools on PATH, EFA."""
    extras = {k: kw.pop(k) for k in ("tools", "efa") if k in kw}
    args = dict(os="ubuntu-26.04", instance="trn2.48xlarge", devices=16, driver="2.31.7.0",
                packages=dict(DPKG_NEURON_233))
    args.update(kw)
    root = make_root(base, **args)
    if extras.get("tools", True):
        add_neuron_tools(root)
    if extras.get("efa", True):
        add_efa(root)
    return root


def add_executable(path: Path, body: str = "exit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def add_neuron_tools(root: Path, *, on_path: bool = True,
                     tools: tuple[str, ...] = ("neuron-ls", "neuron-top")) -> Path:
    """aws-neuronx-tools' binaries in /opt/aws/neuron/bin, and (on_path) the profile.d line the
    setup guides add."""
    for t in tools:
        add_executable(root / "opt/aws/neuron/bin" / t)
    if on_path:
        (root / "etc/profile.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/profile.d/neuron.sh").write_text(
            "export PATH=/opt/aws/neuron/bin:$PATH\n")
    return root


def add_efa(root: Path, *, ib: int = 1, uverbs: int = 1) -> Path:
    for i in range(ib):
        (root / f"sys/class/infiniband/rdmap{i}s0").mkdir(parents=True, exist_ok=True)
    (root / "dev/infiniband").mkdir(parents=True, exist_ok=True)
    for i in range(uverbs):
        (root / f"dev/infiniband/uverbs{i}").write_text("")
    return root


def make_container(root: Path, kind: str = "docker") -> Path:
    """Mark a root as a container: /.dockerenv, or the Kubernetes service account."""
    if kind == "docker":
        (root / ".dockerenv").write_text("")
    else:
        (root / "var/run/secrets/kubernetes.io/serviceaccount").mkdir(parents=True)
    (root / "proc/1").mkdir(parents=True, exist_ok=True)
    (root / "proc/1/cgroup").write_text("0::/kubepods/besteffort/pod1\n" if kind != "docker"
                                        else "0::/docker/0123abcd\n")
    return root


def add_neuron_oci_hook(root: Path, *, wrapper: bool = True) -> Path:
    """containerd set up as AWS's OCI hook tutorial writes /etc/containerd/config.toml, and
    (wrapper) aws-neuronx-oci-hook's runtime wrapper in /opt/aws/neuron/bin."""
    conf = root / "etc/containerd/config.toml"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                    'default_runtime_name = "neuron"\n'
                    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.neuron.options]\n'
                    'BinaryName = "/opt/aws/neuron/bin/oci_neuron_hook_wrapper.sh"\n')
    if wrapper:
        add_executable(root / "opt/aws/neuron/bin/oci_neuron_hook_wrapper.sh",
                       'exec oci-add-hooks "$@"\n')
    return root
