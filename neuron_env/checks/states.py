"""Package states, DKMS builds, a driver inside a container, the limits a multi-rank job hits,
and the shared libraries the compiler loads: driver.states, driver.dkms, container.driver,
os.limits, os.libs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.checks import pkgfix
from neuron_env.checks.driver import finish_dkms_cmd, rebuild_dkms_cmd
from neuron_env.checks.registry import check, verdict
from neuron_env.probes.limits import UNLIMITED

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts
    from neuron_env.report.model import Result

LEGACY_DKMS = "aws-neuron-dkms"
DKMS = "aws-neuronx-dkms"
CONTAINER_DOCS = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/"
                  "tutorials/build-run-neuron-container.html")


def _dpkg_fix(facts: HostFacts, m: Matrix, states: dict[str, str]) -> str:
    """What finishes each half-done package: the legacy driver removed, the driver's headers
    installed before dpkg configures it again, a reinstall for a half-unpacked one."""
    steps = []
    if LEGACY_DKMS in states:
        steps.append(pkgfix.remove(facts, [LEGACY_DKMS]))
    if DKMS in states and states[DKMS] in ("half-configured", "unpacked"):
        steps.append(finish_dkms_cmd(facts))
    redo = sorted(n for n, s in states.items() if s in ("half-installed", "reinstreq")
                  and n != LEGACY_DKMS)
    if redo:
        steps.append(pkgfix.reinstall(facts, redo))
    rest = [n for n in states if n not in (LEGACY_DKMS, DKMS) and n not in redo]
    if rest or not steps:
        steps.append("sudo dpkg --configure -a && sudo apt-get install -f -y")
    if LEGACY_DKMS in states and DKMS not in facts.driver.packages:
        steps.append(pkgfix.install(facts, m, [DKMS], headers=True))
    return " && ".join(steps)


@check("driver.states", "driver")
def driver_states(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """no Neuron package left half-done (dpkg iF/iU/iH, rpm duplicates)."""
    d = facts.driver
    if not d.dpkg_present and d.rpm.present:
        return _rpm_states(facts, m)
    if not d.manager:
        return verdict("skip", d.no_dpkg("no dpkg status and no rpm database: package states "
                                         "cannot be read"))
    if not d.states and not d.packages:
        return verdict("skip", "no Neuron packages installed (see driver.packages)")
    if not d.states:
        return verdict("pass", f"{len(d.packages)} Neuron package(s), all fully installed",
                       observed=dict(d.packages))
    said = [f"{n} {d.versions.get(n, '')} is {s}".replace("  ", " ") for n, s in
            sorted(d.states.items())]
    legacy = " (the legacy driver package: aws-neuronx-dkms replaces it)" \
        if LEGACY_DKMS in d.states else ""
    return verdict("fail", "; ".join(said) + legacy + ": an install or upgrade did not finish "
                   "(dpkg -l shows iF/iU/iH; apt says '1 not fully installed or removed')",
                   observed={"states": dict(d.states)},
                   fix=(cmd := _dpkg_fix(facts, m, d.states)), fix_command=cmd,
                   docs=m.doc("install_troubleshooting") or m.doc("setup"))


def _rpm_states(facts: HostFacts, m: Matrix) -> Result:
    rpm = facts.driver.rpm
    observed = {"source": rpm.source, "packages": {k: list(v) for k, v in rpm.packages.items()}}
    if not rpm.packages and rpm.problem:
        return verdict("warn", f"rpm database not read: {rpm.problem}", observed=observed)
    dupes = {n: v for n, v in rpm.packages.items() if len(v) > 1}
    if dupes:
        tool = pkgfix.rpm_tool(facts)
        cmd = ("sudo dnf remove --duplicates -y" if tool == "dnf" else
               "sudo yum install -y yum-utils && sudo package-cleanup -y --cleandupes")
        said = "; ".join(f"{n}: {', '.join(v)}" for n, v in sorted(dupes.items()))
        return verdict("fail", f"more than one version in the rpm database ({said}): a "
                       f"{tool} transaction did not finish", observed=observed,
                       fix=cmd + " && " + pkgfix.reinstall(facts, sorted(dupes)),
                       fix_command=cmd + " && " + pkgfix.reinstall(facts, sorted(dupes)))
    note = f" ({rpm.problem})" if rpm.problem else ""
    return verdict("pass", f"{len(rpm.packages)} Neuron rpm package(s) in {rpm.source}{note}",
                   observed=observed)


def _installed_driver(facts: HostFacts) -> tuple[str, str] | None:
    """(package, version) of the driver: from the package database, else from the DKMS tree
    (an Amazon Linux 2 rpm database that could not be read still leaves var/lib/dkms)."""
    d = facts.driver
    for name in (DKMS, LEGACY_DKMS):
        ver = d.packages.get(name) or d.versions.get(name)
        if ver:
            return name, ver
    for b in facts.kernel.dkms:
        return f"{b.module}-dkms", b.version
    return None


@check("driver.dkms", "driver")
def driver_dkms(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the DKMS driver is built and installed for the running kernel."""
    k, drv = facts.kernel, _installed_driver(facts)
    if facts.container.in_container:
        return verdict("skip", "in a container: the driver is built on the host "
                       "(see container.driver)")
    if drv is None and not k.dkms:
        return verdict("skip", "no Neuron driver package installed (see driver.module)")
    if k.running is None:
        return verdict("skip", f"the running kernel is not known ({k.source})")
    observed = {"kernel": k.running, "kernel_from": k.source, "module_for": list(k.with_module),
                "dkms": [f"{b.module}/{b.version}/{b.kernel or '-'}"
                         + ("" if b.built or not b.kernel else " (not built)") for b in k.dkms],
                "headers_for": list(k.with_headers)}
    if facts.driver.module_version or k.running in k.with_module:
        how = "loaded" if facts.driver.module_version else "installed"
        return verdict("pass", f"neuron.ko {how} for the running kernel {k.running}",
                       observed=observed)
    built = [b for b in k.dkms if b.kernel == k.running and b.built]
    if built:
        b = built[-1]
        return verdict("fail", f"DKMS built {b.module} {b.version} for {k.running} but did not "
                       "install it", observed=observed,
                       fix=(cmd := f"sudo dkms install {b.module}/{b.version} -k {k.running} "
                                   "&& sudo modprobe neuron"), fix_command=cmd)
    others = f" (it is built for {', '.join(k.with_module)} only)" if k.with_module else ""
    pkg = drv[0] if drv else DKMS
    if k.running not in k.with_headers:
        return verdict("fail", f"no neuron.ko for the running kernel {k.running}{others}: its "
                       "headers are not installed, so DKMS could not build the driver",
                       observed=observed, fix=(cmd := rebuild_dkms_cmd(facts, pkg)),
                       fix_command=cmd, docs=m.doc("setup"))
    where = f" (see /var/lib/dkms/{drv[0].replace('-dkms', '')}/{drv[1].split('-')[0]}/build/" \
            "make.log)" if drv else ""
    return verdict("fail", f"no neuron.ko for the running kernel {k.running}{others}: the "
                   f"headers are there but the DKMS build did not produce it{where}",
                   observed=observed, fix=(cmd := rebuild_dkms_cmd(facts, pkg)),
                   fix_command=cmd, docs=m.doc("setup"))


@check("container.driver", "container")
def container_driver(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """no driver package inside a container (it belongs on the host)."""
    if not facts.container.in_container:
        return verdict("skip", "not in a container")
    d, k = facts.driver, facts.kernel
    found = sorted({n for n in (DKMS, LEGACY_DKMS) if n in d.packages or n in d.versions})
    if k.dkms:
        found.append("a DKMS tree (var/lib/dkms/" + k.dkms[0].module + ")")
    if not found:
        return verdict("pass", "no driver package in the container (the host provides it)",
                       observed={"found": []})
    broken = [n for n in (DKMS, LEGACY_DKMS) if n in d.states]
    status = "fail" if broken else "warn"
    tail = (f"; {', '.join(broken)} is left {d.states[broken[0]]} (its DKMS build cannot work "
            "in a container), which blocks every later apt-get install" if broken else "")
    names = [n for n in (DKMS, LEGACY_DKMS) if n in d.packages or n in d.versions]
    cmd = pkgfix.remove(facts, names) if names else None
    return verdict(status, f"the Neuron driver is installed inside the container "
                   f"({', '.join(found)}){tail}: the driver belongs on the host; the container "
                   "needs only the runtime and tools, and the /dev/neuron* devices passed in",
                   observed={"found": found, "states": {n: d.states[n] for n in broken}},
                   fix=(f"drop it from the image ({cmd}, or leave it out of the Dockerfile) and "
                        "install aws-neuronx-dkms on the host" if cmd else
                        "leave the driver out of the image; install aws-neuronx-dkms on the "
                        "host"), fix_command=cmd, docs=CONTAINER_DOCS)


# -- os.limits: what a job of N ranks inherits ----------------------------------------------------
FDS_PER_RANK = 64  # neuron-env's estimate: device, EFA and bootstrap sockets to its peers
NOFILE_TARGET = 65535
LIMITS_REPORT = "https://github.com/aws-neuron/aws-neuron-sdk/issues/713"


def _ranks(facts: HostFacts, m: Matrix) -> tuple[int, str]:
    """(ranks per node, why): NEURON_RT_VISIBLE_CORES' count, else one per logical core."""
    from neuron_env.checks.driver import parse_core_list

    raw = facts.env.get("NEURON_RT_VISIBLE_CORES")
    cores = parse_core_list(raw) if raw else None
    if cores:
        return len(cores), f"NEURON_RT_VISIBLE_CORES={raw}"
    typ = m.instance_type(facts.instance.type)[1] if facts.instance.type else None
    lnc = typ.lnc_default if typ and typ.lnc_default else 1
    if typ and typ.devices and typ.cores_per_device:
        n = typ.devices * typ.cores_per_device // lnc
        return n, f"one rank per logical NeuronCore of {facts.instance.type}"
    return 1, "instance type unknown: one rank"


def _fmt(v: int | None, unit: str = "") -> str:
    return "unlimited" if v == UNLIMITED else ("unknown" if v is None else f"{v}{unit}")


@check("os.limits", "os")
def os_limits(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """open-file and locked-memory limits for N ranks (and EFA)."""
    lim = facts.limits
    if lim.source is None:
        return verdict("skip", "the job's limits are not known here (under --root: no "
                       "proc/1/limits and no limits.conf entry for '*')")
    ranks, why = _ranks(facts, m)
    need = ranks * FDS_PER_RANK
    efa = bool(facts.efa.ib_devices or facts.efa.uverbs)
    observed = {"nofile": [lim.nofile_soft, lim.nofile_hard],
                "memlock": [lim.memlock_soft, lim.memlock_hard], "source": lim.source,
                "ranks": ranks, "ranks_from": why, "efa": efa}
    problems, fixes = [], []
    soft = lim.nofile_soft
    if soft is not None and soft != UNLIMITED and soft < need:
        problems.append(f"open files {soft} (soft) < {need} that {ranks} ranks need "
                        f"(~{FDS_PER_RANK} each; {why}): 'Too many open files' at bootstrap")
        fixes.append(f"ulimit -n {NOFILE_TARGET} before the launch (raise the hard limit with "
                     f"'* - nofile {NOFILE_TARGET}' in /etc/security/limits.conf; docker run "
                     f"--ulimit nofile={NOFILE_TARGET}:{NOFILE_TARGET})")
    ml = lim.memlock_soft
    if efa and ml is not None and ml != UNLIMITED:
        problems.append(f"locked memory {_fmt(ml // 1024, ' KiB')} (soft): EFA pins the job's "
                        "buffers and needs it unlimited")
        fixes.append("ulimit -l unlimited before the launch ('* - memlock unlimited' in "
                     "/etc/security/limits.conf; docker run --ulimit memlock=-1:-1)")
    if problems:
        return verdict("warn", "; ".join(problems) + f" (read from {lim.source})",
                       observed=observed, fix="; ".join(fixes),
                       docs=m.doc("efa") if efa else LIMITS_REPORT)
    return verdict("pass", f"open files {_fmt(soft)}, locked memory {_fmt(ml)} for {ranks} "
                   f"rank(s) ({lim.source})", observed=observed)


@check("os.libs", "os")
def os_libs(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the shared libraries neuronx-cc's compiled modules need are present."""
    libs = facts.libs
    if libs is None:
        return verdict("skip", "neuronx-cc is not installed in the target")
    if libs.error:
        return verdict("skip", f"{libs.package}: {libs.error}")
    observed = {"shared_objects": libs.files, "unreadable": libs.unreadable,
                "capped": libs.capped, "missing": {k: list(v) for k, v in libs.missing.items()}}
    if libs.missing:
        names = ", ".join(libs.missing)
        first = next(iter(libs.missing.items()))
        fam = pkgfix.family(facts)
        lib = first[0]
        how = (f"apt-file search {lib}" if fam == "apt" else
               f"dnf provides '*/{lib}'" if fam == "rpm" else "the distribution's package search")
        return verdict("fail", f"{libs.package}'s compiled modules and programs need {names}, "
                       f"which nothing on the library path provides (e.g. {lib} for "
                       f"{', '.join(first[1])}): the compiler fails to load them",
                       observed=observed,
                       fix=f"install the package that provides each in the image (find it with "
                           f"{how}), or build on a Neuron DLC base image")
    return verdict("pass", f"{libs.package}: every library its {libs.files} shared objects "
                   "need is found", observed=observed)
