"""Host files under a root (`/` or `--root DIR`): os-release, DMI, architecture, driver, dpkg."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_env.guards.files import FileProblem, read_bounded, read_head, resolve_in_root
from neuron_env.guards.text import escape_controls
from neuron_env.probes.rpmdb import RpmFacts, probe_rpm
from neuron_env.util.record import factory, record

if TYPE_CHECKING:
    from typing import Literal

MAX_READ = 1 << 20  # no host file we read is anywhere near this; a bigger one is not ours


@record
class Root:
    path: Path
    explicit: bool  # True under --root: nothing is read from the real host

    def file(self, rel: str) -> Path:
        """rel under the root; under --root, symlinks resolve inside it (as chroot would)."""
        if not self.explicit:
            return self.path / rel
        try:
            return resolve_in_root(self.path, rel)
        except FileProblem:
            return self.path / rel

    def read_checked(self, rel: str, limit: int = MAX_READ,
                     encoding: str = "utf-8") -> tuple[str | None, str | None]:
        """(text, None), (None, None) when absent or unreadable, or (None, problem) for a
        FIFO, a device, a file over the cap or a symlink loop: regular files only."""
        try:
            path = resolve_in_root(self.path, rel) if self.explicit else self.path / rel
            data = read_bounded(path, limit, nofollow=self.explicit)
        except FileProblem as e:
            return None, str(e)
        except OSError:
            return None, None
        return data.decode(encoding, "replace"), None

    def read(self, rel: str, limit: int = MAX_READ, encoding: str = "utf-8") -> str | None:
        return self.read_checked(rel, limit, encoding)[0]


def make_root(path: str | None) -> Root:
    return Root(Path(path) if path else Path("/"), explicit=bool(path))


# -- os-release ---------------------------------------------------------------------------------
@record
class OSFacts:
    id: str | None = None
    version_id: str | None = None
    codename: str | None = None
    pretty_name: str | None = None
    id_like: tuple[str, ...] = ()
    source: str | None = None
    error: str | None = None


def _unquote(raw: str) -> str:
    v = raw.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1]
        if raw.strip()[0] == '"':
            v = re.sub(r'\\([\\$"`])', r"\1", v)
    elif v[:1] in "\"'":  # unterminated quote: keep what is there
        v = v[1:]
    return v.strip()


def parse_os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, _, v = line.partition("=")
        k = k.strip()
        if re.match(r"^[A-Z_][A-Z0-9_]*$", k):
            out[k] = escape_controls(_unquote(v))  # a host's text never drives a terminal
    return out


def probe_os(root: Root) -> OSFacts:
    for rel in ("etc/os-release", "usr/lib/os-release"):
        text, problem = root.read_checked(rel)
        if problem:
            return OSFacts(source=str(root.file(rel)), error=f"{problem}: cannot tell the OS")
        if text is None:
            continue
        kv = parse_os_release(text)
        if not kv.get("ID"):
            return OSFacts(source=str(root.file(rel)),
                           error=f"{root.file(rel)} has no ID= line (empty or not os-release)")
        codename = kv.get("VERSION_CODENAME") or kv.get("UBUNTU_CODENAME")
        return OSFacts(id=kv["ID"].lower(), version_id=kv.get("VERSION_ID"), codename=codename,
                       pretty_name=kv.get("PRETTY_NAME"),
                       id_like=tuple(kv.get("ID_LIKE", "").split()), source=str(root.file(rel)))
    return OSFacts(error=f"no os-release under {root.path} (looked for etc/os-release and "
                         "usr/lib/os-release)")


# -- architecture -------------------------------------------------------------------------------
ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64", 0x03: "i386", 0x28: "arm", 0xF3: "riscv64"}


def probe_arch(root: Root) -> tuple[str | None, str]:
    """(arch, source). Under --root the image's own binaries say it (ELF e_machine)."""
    if not root.explicit:
        return os.uname().machine or None, "uname"  # (platform costs 4 ms to import)
    for rel in ("usr/bin/env", "bin/sh", "usr/bin/sh"):
        try:
            head = read_head(root.file(rel), 20, nofollow=True)
        except OSError:
            continue
        if len(head) == 20 and head[:4] == b"\x7fELF":
            order: Literal["little", "big"] = "little" if head[5] == 1 else "big"
            machine = int.from_bytes(head[18:20], order)
            return ELF_MACHINES.get(machine, f"elf-machine-{machine:#x}"), f"ELF {rel}"
    return None, "no ELF binary (usr/bin/env, bin/sh) under the root"


# -- DMI ----------------------------------------------------------------------------------------
@record
class DMIFacts:
    sys_vendor: str | None = None
    product_name: str | None = None
    board_asset_tag: str | None = None

    @property
    def present(self) -> bool:
        return self.sys_vendor is not None

    @property
    def is_ec2(self) -> bool | None:
        if self.sys_vendor is None:
            return None
        return self.sys_vendor.strip() == "Amazon EC2"


def probe_dmi(root: Root) -> DMIFacts:
    def rd(name: str) -> str | None:
        v = root.read(f"sys/devices/virtual/dmi/id/{name}", limit=4096)
        return escape_controls(v.strip()) if v is not None and v.strip() else None

    return DMIFacts(rd("sys_vendor"), rd("product_name"), rd("board_asset_tag"))


# -- driver, devices, dpkg ------------------------------------------------------------------------
@record
class DeviceInfo:
    name: str
    core_count: int | None = None
    arch_type: str | None = None
    device_name: str | None = None
    instance_type: str | None = None


@record
class DriverFacts:
    module_version: str | None = None
    device_nodes: tuple[str, ...] = ()
    sysfs_devices: tuple[DeviceInfo, ...] = ()
    packages: dict[str, str] = factory(dict)  # installed Neuron apt packages
    dpkg_present: bool = False
    sysfs_present: bool = True  # False for a mounted image: no live /sys to read
    dpkg_problem: str | None = None  # a dpkg status there but not read (too large, a FIFO)
    states: dict[str, str] = factory(dict)  # dpkg: Neuron packages left half-done, and how
    versions: dict[str, str] = factory(dict)  # dpkg: the version of each of those
    held: tuple[str, ...] = ()  # dpkg: Neuron packages on hold (apt needs to be told)
    rpm: RpmFacts = factory(RpmFacts)  # the rpm database's Neuron packages (rpm hosts)

    @property
    def manager(self) -> str | None:
        """"dpkg" or "rpm": where `packages` came from; None: neither database is there, or an
        rpm database that could not be read (its problem is what no_dpkg says)."""
        if self.dpkg_present:
            return "dpkg"
        unread = self.rpm.problem is not None and not self.rpm.packages
        return "rpm" if self.rpm.present and not unread else None

    def no_dpkg(self, default: str) -> str:
        """Why there are no package facts: the status file's problem, the rpm database's,
        else `default`."""
        return self.dpkg_problem or (self.rpm.problem if self.rpm.present else None) or default


def _stanza_fields(stanza: str) -> dict[str, str]:
    fields = {}
    for line in stanza.splitlines():
        if line[:1].isspace() or ":" not in line:
            continue
        k, _, v = line.partition(":")
        fields[k.strip()] = v.strip()
    return fields


def _neuron_stanzas(text: str, prefix: str):
    """The fields of each stanza whose Package is prefix*: only those stanzas are parsed (a
    host has thousands of others; `find` jumps to ours and the blank lines around them bound
    each stanza)."""
    needle, at = "Package: " + prefix, 0
    while (at := text.find(needle, at)) >= 0:
        if at and text[at - 1] != "\n":  # not at a line start: some other field's text
            at += len(needle)
            continue
        start = text.rfind("\n\n", 0, at) + 1
        end = _BLANK.search(text, at)
        at = end.end() - 1 if end else len(text)
        fields = _stanza_fields(text[start:end.start() if end else len(text)])
        if fields.get("Package", "").startswith(prefix):
            yield fields


def parse_dpkg_status(text: str, prefix: str = "aws-neuron") -> dict[str, str]:
    """Installed packages named prefix*."""
    return {f["Package"]: f.get("Version", "?") for f in _neuron_stanzas(text, prefix)
            if f.get("Status", "").endswith(" installed")}


# dpkg's states that mean an install or removal did not finish (`dpkg -l` shows iU, iF, iH,
# and an R third column for reinstreq)
BROKEN_STATES = ("half-configured", "unpacked", "half-installed", "triggers-awaited")


def parse_dpkg_states(text: str, prefix: str = "aws-neuron") -> dict[str, str]:
    """{name: state} of the prefix* packages dpkg left unfinished: `half-configured` (a failed
    postinst: dpkg -l's iF), `unpacked`, `half-installed`, or `reinstreq` (the error flag)."""
    out = {}
    for f in _neuron_stanzas(text, prefix):
        words = f.get("Status", "").split()
        if len(words) != 3:
            continue
        if words[1] == "reinstreq":
            out[f["Package"]] = "reinstreq"
        elif words[2] in BROKEN_STATES:
            out[f["Package"]] = words[2]
    return out


_BLANK = re.compile(r"\n[ \t]*\n")


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def probe_driver(root: Root) -> DriverFacts:
    version = root.read("sys/module/neuron/version", limit=256)
    try:
        nodes = sorted((p.name for p in root.file("dev").iterdir()
                        if re.fullmatch(r"neuron\d+", p.name)), key=lambda n: int(n[6:]))
    except OSError:
        nodes = []
    devices = []
    base = root.file("sys/devices/virtual/neuron_device")
    try:
        names = sorted((p.name for p in base.iterdir() if re.fullmatch(r"neuron\d+", p.name)),
                       key=lambda n: int(n[6:]))
    except OSError:
        names = []
    for n in names:
        rel = f"sys/devices/virtual/neuron_device/{n}"

        def rd(sub: str, rel: str = rel) -> str | None:
            v = root.read(f"{rel}/{sub}", limit=256)
            return v.strip() or None if v is not None else None

        devices.append(DeviceInfo(n, _int(rd("core_count")), rd("info/architecture/arch_type"),
                                  rd("info/architecture/device_name"),
                                  rd("info/architecture/instance_type")))
    # names, versions and Status are ASCII: latin-1 reads them alike and decodes the whole
    # file (0.5-3 MB of package descriptions) about 3x faster than utf-8
    status, problem = root.read_checked(DPKG_STATUS, limit=DPKG_MAX, encoding="latin-1")
    packages = parse_dpkg_status(status) if status else {}
    rpm = probe_rpm(root) if status is None and not problem else RpmFacts()
    if rpm.present:
        packages = {k: v[-1] for k, v in rpm.packages.items()}
    return DriverFacts(
        module_version=version.strip() or None if version is not None else None,
        device_nodes=tuple(nodes), sysfs_devices=tuple(devices),
        packages=packages, dpkg_present=status is not None,
        states=parse_dpkg_states(status) if status else {},
        versions=_versions(status) if status else {}, rpm=rpm,
        held=parse_dpkg_holds(status) if status else (),
        sysfs_present=root.file("sys/module").is_dir(),
        dpkg_problem=_dpkg_problem(root, problem) if problem else None,
    )


def parse_dpkg_holds(text: str, prefix: str = "aws-neuron") -> tuple[str, ...]:
    """The prefix* packages marked hold (`apt-mark hold`, as the DLAMIs ship the driver)."""
    return tuple(sorted(f["Package"] for f in _neuron_stanzas(text, prefix)
                        if f.get("Status", "").startswith("hold ")))


def _versions(text: str) -> dict[str, str]:
    return {f["Package"]: f.get("Version", "?") for f in _neuron_stanzas(text, "aws-neuron")}


DPKG_STATUS = "var/lib/dpkg/status"
DPKG_MAX = 64 << 20  # a big host's status is 2-5 MB


def _dpkg_problem(root: Root, problem: str) -> str:
    """A dpkg status that is there but was not read, said as such (not "no dpkg")."""
    try:
        st = root.file(DPKG_STATUS).stat()
    except OSError:
        return f"{DPKG_STATUS}: {problem}: skipped"
    if stat.S_ISREG(st.st_mode) and st.st_size > DPKG_MAX:
        return f"{DPKG_STATUS} is too large ({st.st_size} bytes, cap {DPKG_MAX}): skipped"
    return f"{problem}: skipped"
