"""driver.module, driver.packages, driver.devices (instance.aws is checks/aws.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neuron_env.checks import fixes, pkgfix
from neuron_env.checks.registry import check, result
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import InstanceType, Matrix
    from neuron_env.probes.facts import HostFacts
    from neuron_env.probes.host import DriverFacts


def apt_fix(facts: HostFacts, m: Matrix, names: list[str] | None = None) -> dict[str, Any]:
    """fix/fix_command: the Neuron apt repository set up for this host's codename, then the
    packages; where the host is not apt-based, what to do by hand."""
    if pkgfix.family(facts) == "rpm" and m.os_entry(facts.os.id or "",
                                                    facts.os.version_id or "") is not None:
        line = pkgfix.rpm_install_with_repo(facts, m, names)
        return {"fix": line + fixes.chroot_note(facts), "fix_command": line}
    cmd = fixes.apt_install(facts, m, names)
    if cmd is None:
        return {"fix": f"{facts.os.pretty_name or facts.os.id or 'this OS'} has no Neuron apt "
                       "repository: use a supported Ubuntu (see os.release), then install "
                       "aws-neuronx-dkms and the tools from " + fixes.APT_REPO}
    return {"fix": cmd + fixes.chroot_note(facts), "fix_command": cmd}


def install_fix(facts: HostFacts, m: Matrix, names: list[str], before: str = "",
                headers: bool = False, after: str = "") -> dict[str, Any]:
    """fix/fix_command that install Neuron `names` with the host's own tool, `before` (a
    command, e.g. removing a legacy package) first; where neither Neuron's apt nor its yum
    repository serves the host (Debian), driver.module's words and no command: an apt-get
    line for packages its repositories do not have would contradict them (#44)."""
    pre = f"{before} && " if before else ""
    if pkgfix.family(facts) != "rpm" and fixes.apt_install(facts, m, names) is None:
        words = apt_fix(facts, m, names)["fix"]
        return {"fix": f"{before}; then: {words}" if before else words,
                "fix_command": None}
    cmd = pre + pkgfix.install(facts, m, names, headers=headers)
    return {"fix": cmd + after, "fix_command": cmd}


def _image(facts: HostFacts) -> bool:
    """A mounted image under --root: it has no live /sys, so nothing is loaded or visible."""
    return facts.root.explicit and not facts.driver.sysfs_present


def _not_neuron_host(facts: HostFacts, m: Matrix) -> str | None:
    """Why device checks cannot apply here, or None."""
    inst = facts.instance
    if inst.type and m.instance_type(inst.type)[0] is None:
        return f"{inst.type} is not a Neuron instance"
    return None


def rebuild_dkms_cmd(facts: HostFacts, package: str = "aws-neuronx-dkms") -> str:
    """Headers for the running kernel, then DKMS builds the driver again (a reinstall of the
    package runs its DKMS build)."""
    k = pkgfix.kernel_expr(facts)
    if pkgfix.family(facts) == "rpm":
        return (f'sudo {pkgfix.rpm_tool(facts)} install -y "kernel-devel-{k}" && '
                f'sudo {pkgfix.rpm_tool(facts)} reinstall -y {package}')
    return (f'sudo apt-get install -y "linux-headers-{k}" && '
            f"sudo dpkg-reconfigure {package}")


def finish_dkms_cmd(facts: HostFacts) -> str:
    """A half-configured aws-neuronx-dkms (its DKMS build failed): headers, then let dpkg
    finish configuring it."""
    return (f'sudo apt-get install -y "linux-headers-{pkgfix.kernel_expr(facts)}" && '
            "sudo dpkg --configure -a")


def _tree_version(facts: HostFacts, module: str) -> str | None:
    """The driver version var/lib/dkms holds for `module` (aws-neuronx, or the legacy
    aws-neuron): the evidence left when the package database could not be read."""
    return next((b.version for b in facts.kernel.dkms if b.module == module), None)


def _half_done(facts: HostFacts, m: Matrix, observed: dict[str, Any]) -> Result | None:
    """The legacy aws-neuron-dkms, or an aws-neuronx-dkms dpkg left unconfigured: named as
    such, not as "not installed"."""
    d, docs = facts.driver, m.doc("setup")
    old = d.packages.get("aws-neuron-dkms") or d.versions.get("aws-neuron-dkms") or (
        _tree_version(facts, "aws-neuron") if d.manager is None else None)
    if old:
        how = f"left {d.states['aws-neuron-dkms']}" if "aws-neuron-dkms" in d.states \
            else "installed"
        return result("driver.module", "fail",
                      f"the old aws-neuron-dkms {old} is {how}; it conflicts with "
                      "aws-neuronx-dkms (which supports every instance type, Inf1 included)",
                      observed=observed, docs=docs,
                      **install_fix(facts, m, ["aws-neuronx-dkms"], headers=True,
                                    before=pkgfix.remove(facts, ["aws-neuron-dkms"])))
    if (state := d.states.get("aws-neuronx-dkms")) is not None:
        return result("driver.module", "fail",
                      f"aws-neuronx-dkms {d.versions.get('aws-neuronx-dkms', '')} is "
                      f"{state}: its install did not finish (see driver.states)",
                      observed={**observed, "state": state}, docs=docs,
                      fix=(cmd := finish_dkms_cmd(facts)), fix_command=cmd)
    return None


@check("driver.module", "driver")
def driver_module(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the neuron kernel module is loaded (aws-neuronx-dkms)."""
    d = facts.driver
    dkms = d.packages.get("aws-neuronx-dkms")
    observed = {"module_version": d.module_version, "aws-neuronx-dkms": dkms}
    docs = m.doc("setup")
    if (half := _half_done(facts, m, observed)) is not None:
        return half
    pin = next((a.version for a in m.driver.apt if a.name == "aws-neuronx-dkms"), None)
    image = _image(facts)
    if facts.instance.assumed or image:
        # A build host or a mounted image: the module cannot be loaded here; judge the package.
        where = "the image" if image else "this build host"
        if dkms:
            return result("driver.module", "pass",
                          f"aws-neuronx-dkms {dkms} installed in {where} (loading not checked: "
                          f"{'mounted image' if image else 'assumed instance type'})",
                          observed=observed, expected=pin)
        if not d.manager:
            return result("driver.module", "skip",
                          d.no_dpkg(f"no dpkg status in {where}: the driver package "
                                    "cannot be checked"))
        return result("driver.module", "fail",
                      f"aws-neuronx-dkms is not installed in {where}", observed=observed,
                      docs=docs, **apt_fix(facts, m))
    why = _not_neuron_host(facts, m)
    if why and not d.module_version and not dkms:
        return result("driver.module", "skip", f"{why}: no Neuron driver expected")
    if d.module_version:
        extra = f" (aws-neuronx-dkms {dkms})" if dkms else ""
        if pin and dkms and dkms.split("-")[0] != pin:
            return result("driver.module", "warn",
                          f"neuron module {d.module_version} loaded, but aws-neuronx-dkms "
                          f"{dkms} differs from the release's {pin}", observed=observed,
                          expected=pin, **install_fix(facts, m, ["aws-neuronx-dkms"]))
        return result("driver.module", "pass",
                      f"neuron module {d.module_version} loaded{extra}", observed=observed,
                      expected=pin)
    if dkms:
        return result("driver.module", "fail",
                      f"aws-neuronx-dkms {dkms} is installed but the neuron module is not "
                      "loaded", observed=observed,
                      fix=(cmd := 'sudo modprobe neuron || { ' + rebuild_dkms_cmd(facts)
                           + ' && sudo modprobe neuron; }'),
                      fix_command=cmd, docs=docs)
    if d.manager is None and (tree := _tree_version(facts, "aws-neuronx")):
        why = d.no_dpkg("no package database")
        return result("driver.module", "fail",
                      f"aws-neuronx-dkms {tree} is in the DKMS tree ({why}) but the neuron "
                      "module is not loaded (see driver.dkms)", observed=observed, docs=docs,
                      fix=(cmd := rebuild_dkms_cmd(facts)), fix_command=cmd)
    return result("driver.module", "fail",
                  "the Neuron driver is not installed (no neuron module, no aws-neuronx-dkms)",
                  observed=observed, docs=docs, **apt_fix(facts, m))


@check("driver.packages", "driver")
def driver_packages(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """the release's apt packages are installed."""
    d = facts.driver
    if not m.driver.apt:
        return result("driver.packages", "skip", "the matrix lists no apt packages")
    if not d.manager:
        return result("driver.packages", "skip",
                      d.no_dpkg("no dpkg status (var/lib/dpkg/status): not a Debian/Ubuntu "
                                "system"))
    why = _not_neuron_host(facts, m)
    if why and not d.packages:
        return result("driver.packages", "skip", f"{why}: no Neuron packages expected")
    missing: list[str] = []
    differ: list[str] = []
    half: list[str] = []  # left half-done by dpkg: named so, not "missing"
    for a in m.driver.apt:
        have = d.packages.get(a.name)
        if have is None and a.name in d.states:
            half.append(f"{a.name} {d.versions.get(a.name, '')} is {d.states[a.name]}")
        elif have is None:
            missing.append(a.name)
        elif a.version and not have.startswith(a.version):
            differ.append(f"{a.name} {have} (release: {a.version})")
    observed = {a.name: d.packages.get(a.name) for a in m.driver.apt}
    expected = {a.name: a.version or "any" for a in m.driver.apt}
    tail = f"; {'; '.join(half)} (see driver.states)" if half else ""
    if missing:
        return result("driver.packages", "warn",
                      f"missing {'rpm' if d.manager == 'rpm' else 'apt'} packages: "
                      f"{', '.join(missing)}{tail}", observed=observed,
                      expected=expected, **apt_fix(facts, m, missing))
    differ += [h + " (see driver.states)" for h in half]
    if differ:
        return result("driver.packages", "warn",
                      f"versions differ from the release: {'; '.join(differ)}",
                      observed=observed, expected=expected)
    return result("driver.packages", "pass",
                  ", ".join(f"{k} {v}" for k, v in observed.items()), observed=observed,
                  expected=expected)


@check("driver.devices", "driver")
def driver_devices(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """/dev/neuron* nodes and neuron-ls agree with the instance type."""
    d, inst = facts.driver, facts.instance
    if inst.assumed:
        return result("driver.devices", "skip",
                      f"instance type assumed ({inst.type}): devices of the target cannot be "
                      "seen from this host")
    if _image(facts):
        return result("driver.devices", "skip",
                      f"{facts.root.path} has no sys/: a mounted image shows no devices")
    why = _not_neuron_host(facts, m)
    nodes = len(d.device_nodes)
    if why and nodes == 0:
        return result("driver.devices", "skip", f"{why}: no Neuron devices expected")
    typ = m.instance_type(inst.type)[1] if inst.type else None
    expected = typ.devices if typ else None
    nls = facts.neuron_ls
    listed = len(nls.devices) if nls and nls.devices is not None else None
    observed = {"device_nodes": nodes, "sysfs_devices": len(d.sysfs_devices),
                "neuron_ls_devices": listed,
                "cores": [x.core_count for x in d.sysfs_devices] or None}
    note = f"; neuron-ls: {nls.error}" if nls and nls.error and nls.path else ""
    if nodes == 0:
        return result("driver.devices", "fail",
                      "no Neuron devices visible (/dev/neuron* missing)"
                      + (f" on {inst.type}, which should have {expected}" if expected else "")
                      + note, observed=observed, expected=expected,
                      fix="load the driver (sudo modprobe neuron) and check that this is a "
                          "Trn2/Trn3 instance; inside a container pass --device=/dev/neuron0 …")
    if expected is not None and nodes != expected:
        return result("driver.devices", "fail",
                      f"{nodes} of {expected} Neuron devices visible on {inst.type}{note}",
                      observed=observed, expected=expected,
                      fix="check 'neuron-ls' and dmesg for devices that failed to initialise; "
                          "a container may have been given only some /dev/neuron* nodes")
    if listed is not None and listed != nodes:
        return result("driver.devices", "warn",
                      f"{nodes} device nodes but neuron-ls lists {listed}", observed=observed,
                      expected=expected)
    if nls and nls.error and nls.path:
        return result("driver.devices", "warn",
                      f"{nodes} Neuron device{'s' if nodes != 1 else ''} visible{note}",
                      observed=observed, expected=expected,
                      fix="reinstall aws-neuronx-tools; if neuron-ls hangs, check dmesg")
    return result("driver.devices", "pass",
                  f"{nodes} Neuron device{'s' if nodes != 1 else ''} visible"
                  + (f" (as expected for {inst.type})" if expected else ""),
                  observed=observed, expected=expected)


# -- driver.versions: driver, runtime, collectives and tools in step ----------------------------
LEGACY = ("aws-neuron-dkms", "aws-neuron-runtime", "aws-neuron-runtime-base", "aws-neuron-tools")
STACK = ("aws-neuronx-dkms", "aws-neuronx-runtime-lib", "aws-neuronx-collectives",
         "aws-neuronx-tools")


def base_version(v: str | None) -> str | None:
    """dpkg's `2.34.10.0-0e2a8f4ad` -> `2.34.10.0`."""
    return v.split("-")[0].split("_")[0].strip() if v else None


def minor(v: str | None) -> tuple[int, ...] | None:
    try:
        return tuple(int(x) for x in (base_version(v) or "").split(".")[:2])
    except ValueError:
        return None


def _vtuple(v: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in (base_version(v) or "").split("."))
    except ValueError:
        return ()


def _apt_version(m: Matrix, name: str) -> str | None:
    a = m.apt(name)
    return a.version if a else None


def _legacy_result(facts: HostFacts, m: Matrix) -> Result | None:
    d = facts.driver
    legacy = [n for n in LEGACY if n in d.packages]
    if not legacy:
        return None
    return result("driver.versions", "fail",
                  f"legacy non-x package(s) installed: {', '.join(legacy)} (they conflict with "
                  "the aws-neuronx-* packages: 'Unable to determine Neuron Driver version', "
                  "runtime compatibility-id errors)",
                  observed={n: d.packages[n] for n in legacy},
                  **install_fix(facts, m, list(STACK), before=pkgfix.remove(facts, legacy)),
                  docs=m.doc("install_troubleshooting") or m.doc("setup"))


def _release_differences(d: DriverFacts, m: Matrix) -> tuple[list[str], list[str]]:
    """(hard, soft): versions against the matrix's; soft when the matrix's are unconfirmed."""
    hard: list[str] = []
    soft: list[str] = []
    for name in STACK:
        a, have = m.apt(name), base_version(d.packages.get(name))
        if not (a and a.version and have) or have == a.version:
            continue
        msg = f"{name} {have} (Neuron {m.release}: {a.version})"
        (hard if a.confirmed else soft).append(msg)
    return hard, soft


def _stack_mismatches(d: DriverFacts, m: Matrix) -> list[str]:
    """Packages out of step with each other, whatever the release says."""
    p = d.packages
    out = []
    rt, coll = p.get("aws-neuronx-runtime-lib"), p.get("aws-neuronx-collectives")
    if rt and coll and minor(rt) != minor(coll):
        out.append(f"aws-neuronx-runtime-lib {base_version(rt)} and aws-neuronx-collectives "
                   f"{base_version(coll)} are from different releases (undefined symbol nrt_… "
                   "errors)")
    want_rt, want_dkms = m.apt("aws-neuronx-runtime-lib"), m.apt("aws-neuronx-dkms")
    dkms = p.get("aws-neuronx-dkms")
    if (rt and dkms and want_rt and want_dkms and want_rt.version and want_dkms.version
            and minor(rt) == minor(want_rt.version)
            and _vtuple(dkms) < _vtuple(want_dkms.version)):
        out.append(f"aws-neuronx-runtime-lib {base_version(rt)} (Neuron {m.release}) needs "
                   f"aws-neuronx-dkms {want_dkms.version} or newer, found {base_version(dkms)}")
    return out


def _loaded_vs_installed(facts: HostFacts) -> str | None:
    d = facts.driver
    dkms = base_version(d.packages.get("aws-neuronx-dkms"))
    if facts.instance.assumed or _image(facts) or not (d.module_version and dkms):
        return None
    if base_version(d.module_version) != dkms:
        return (f"the loaded neuron module is {d.module_version} but aws-neuronx-dkms {dkms} "
                "is installed (the new module is not loaded yet)")
    return None


@check("driver.versions", "driver")
def driver_versions(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """aws-neuronx dkms/runtime/collectives/tools vs the release."""
    d = facts.driver
    if not d.manager:
        return result("driver.versions", "skip",
                      d.no_dpkg("no dpkg status: package versions cannot be compared"))
    if (r := _legacy_result(facts, m)) is not None:
        return r
    present = {n: d.packages.get(n) for n in STACK}
    if not any(present.values()):
        return result("driver.versions", "skip",
                      "no aws-neuronx packages installed (see driver.packages)")
    expected = {n: _apt_version(m, n) for n in STACK}
    observed = {**present, "module_version": d.module_version}
    fails = _stack_mismatches(d, m)
    loaded = _loaded_vs_installed(facts)
    hard, soft = _release_differences(d, m)
    reload = ("; then reload the driver (sudo modprobe -r neuron && sudo modprobe neuron, "
              "or reboot)")
    if loaded:
        fails.append(loaded)
    how = install_fix(facts, m, list(STACK), after=reload if loaded else "")
    if fails or hard:
        probs = fails + hard
        return result("driver.versions", "fail", probs[0] + (
            f" (+{len(probs) - 1} more)" if len(probs) > 1 else ""), observed=observed,
            expected=expected, **how,
            docs=m.doc("runtime_notes") or m.doc("setup"),
            details={"problems": probs})
    if soft:
        srcs = {a.source for n in STACK if (a := m.apt(n)) and not a.confirmed}
        where = ", ".join(s.url for x in sorted(filter(None, srcs)) if (s := m.source_by_id(x)))
        return result("driver.versions", "warn",
                      f"differs from Neuron {m.release}'s component versions (not confirmed as "
                      f"apt pins): {'; '.join(soft)}", observed=observed, expected=expected,
                      **how, docs=where or m.doc("release_notes"))
    return result("driver.versions", "pass",
                  "driver, runtime, collectives and tools in step"
                  + (f" with Neuron {m.release}" if any(expected.values()) else ""),
                  observed=observed, expected=expected)


# -- driver.cores: the logical NeuronCores the runtime will show, and who holds them -------------
def parse_core_list(text: str) -> set[int] | None:
    """NEURON_RT_VISIBLE_CORES: `0-3,6` -> {0, 1, 2, 3, 6}; None when malformed."""
    out: set[int] = set()
    for part in text.replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or (hi and int(hi) < int(lo)):
            return None
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def _lnc(facts: HostFacts, typ: InstanceType | None) -> tuple[int | None, str, str | None]:
    """(lnc, where from, problem)."""
    raw = facts.env.get("NEURON_LOGICAL_NC_CONFIG")
    if raw is not None:
        if raw.strip() not in ("1", "2"):
            return None, "NEURON_LOGICAL_NC_CONFIG", (
                f"NEURON_LOGICAL_NC_CONFIG={raw!r}: only 1 and 2 are supported (LNC=8 is not)")
        return int(raw), "NEURON_LOGICAL_NC_CONFIG", None
    nls = facts.neuron_ls.devices if facts.neuron_ls else None
    seen = {d.get("logical_neuroncore_config") for d in nls or ()} - {None}
    if len(seen) == 1 and isinstance(next(iter(seen)), int):
        return next(iter(seen)), "neuron-ls", None
    if typ and typ.lnc_default:
        return typ.lnc_default, "the instance type's default", None
    return None, "unknown", None


def _holder_findings(facts: HostFacts) -> tuple[list[str], list[str], list[str]]:
    """(stale, busy, fixes) from the processes neuron-ls lists."""
    stale, busy, fixes = [], [], []
    for h in facts.holders:
        where = f"pid {h.pid} ({h.command}) on device(s) {', '.join(map(str, h.devices))}"
        if h.alive is False:
            stale.append(f"{where} no longer exists but still holds NeuronCores")
            fixes.append("sudo modprobe -r neuron && sudo modprobe neuron (or reboot) to release "
                         f"the cores of the dead pid {h.pid}")
        elif h.zombie:
            stale.append(f"{where} is a zombie holding NeuronCores")
            fixes.append(f"sudo kill -9 {h.ppid} (the parent of zombie {h.pid})" if h.ppid
                         else f"sudo kill -9 {h.pid}")
        else:
            busy.append(where)
    return stale, busy, fixes


def _expected_logical(typ: InstanceType | None, lnc: int | None) -> int | None:
    if typ and typ.devices and typ.cores_per_device and lnc:
        return typ.devices * typ.cores_per_device // lnc
    return None


@check("driver.cores", "driver")
def driver_cores(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """logical NeuronCores vs neuron-ls; stale core holders."""
    if facts.instance.assumed or _image(facts):
        return result("driver.cores", "skip",
                      "NeuronCores of the target cannot be seen from this host or image")
    why = _not_neuron_host(facts, m)
    if why and not facts.driver.device_nodes:
        return result("driver.cores", "skip", f"{why}: no NeuronCores expected")
    typ = m.instance_type(facts.instance.type)[1] if facts.instance.type else None
    lnc, lnc_from, bad_lnc = _lnc(facts, typ)
    expected = _expected_logical(typ, lnc)
    nls = facts.neuron_ls.devices if facts.neuron_ls else None
    listed = sum(d.get("nc_count") or 0 for d in nls) if nls else None
    visible_raw = facts.env.get("NEURON_RT_VISIBLE_CORES")
    visible = parse_core_list(visible_raw) if visible_raw else None
    observed = {"lnc": lnc, "lnc_from": lnc_from, "neuron_ls_logical_cores": listed,
                "NEURON_RT_VISIBLE_CORES": visible_raw,
                "holders": [{"pid": h.pid, "command": h.command, "alive": h.alive}
                            for h in facts.holders]}
    docs = m.doc("lnc")
    problems, fixes = [], []
    if bad_lnc:
        problems.append(bad_lnc)
        fixes.append("export NEURON_LOGICAL_NC_CONFIG=2 (the Trn2 default) or 1")
    if visible_raw and visible is None:
        problems.append(f"NEURON_RT_VISIBLE_CORES={visible_raw!r} is not a core list "
                        "such as '0-3' or '0,2'")
        fixes.append("export NEURON_RT_VISIBLE_CORES=0-3  (or unset it)")
    total = listed if listed else expected
    if visible and total is not None and max(visible) >= total:
        problems.append(f"NEURON_RT_VISIBLE_CORES={visible_raw} asks for core {max(visible)}, "
                        f"but only {total} logical cores exist (0-{total - 1}) at LNC={lnc}")
        fixes.append(f"export NEURON_RT_VISIBLE_CORES=0-{total - 1}")
    stale, busy, hfix = _holder_findings(facts)
    problems += stale
    fixes += hfix
    if problems:
        return result("driver.cores", "fail", problems[0] + (
            f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""), observed=observed,
            expected=expected, fix="; ".join(fixes), docs=docs,
            details={"problems": problems})
    return _cores_verdict(facts, observed, expected, listed, lnc, lnc_from, busy, visible, docs)


def _uncounted(facts: HostFacts, phys: list[int], lnc: int | None) -> str:
    """Why the logical cores could not be counted: the host's files, or a fact the matrix
    lacks (the type's default LNC), said as such."""
    if phys and len(phys) == len(facts.driver.sysfs_devices) and not lnc:
        return (f"the matrix gives no default LNC for {facts.instance.type or 'this host'} and "
                "neither NEURON_LOGICAL_NC_CONFIG nor neuron-ls says it: the logical cores "
                f"cannot be counted from the {sum(phys)} physical ones")
    return "the devices' core counts were not readable and neuron-ls did not run"


def _cores_verdict(facts: HostFacts, observed: dict[str, Any], expected: int | None,
                   listed: int | None, lnc: int | None, lnc_from: str, busy: list[str],
                   visible: set[int] | None, docs: str | None) -> Result:
    """Passes only on what was seen: neuron-ls's count, or the devices' own core counts in
    sysfs; a count that only the instance type gives is said as expected, never as seen."""
    nodes = facts.driver.device_nodes
    phys = [d.core_count for d in facts.driver.sysfs_devices if d.core_count]
    whole = lnc and nodes and phys and len(phys) == len(facts.driver.sysfs_devices)
    sysfs = sum(phys) // lnc if whole and lnc else None
    seen, src = (listed, "neuron-ls") if listed is not None else (sysfs, "sysfs")
    observed = {**observed, "devices_visible": len(nodes), "sysfs_logical_cores": sysfs}
    at = f" at LNC={lnc} ({lnc_from})" if lnc else ""
    if seen is None:
        why = ("no Neuron device visible" if not nodes else _uncounted(facts, phys, lnc))
        exp = f": {expected} logical NeuronCores expected{at}" if expected else ""
        return result("driver.cores", "skip" if not nodes else "warn",
                      f"{why}{exp}, none seen (see driver.devices)", observed=observed,
                      expected=expected)
    n = len(visible) if visible else seen
    what = f"{n} logical NeuronCores{at}"
    if visible:
        what += " (NEURON_RT_VISIBLE_CORES)"
    if expected is not None and seen != expected:
        return result("driver.cores", "warn",
                      f"{src} shows {seen} logical cores; {facts.instance.type} at "
                      f"LNC={lnc} should have {expected}", observed=observed,
                      expected=expected, fix="check dmesg and neuron-ls for cores that failed "
                      "to initialise", docs=docs)
    if busy:
        return result("driver.cores", "warn",
                      f"{what}; in use by {len(busy)} process(es): {busy[0]}",
                      observed=observed, expected=expected,
                      fix="a job started now fails with 'NeuronCore(s) not available' unless "
                          "it uses other cores (NEURON_RT_VISIBLE_CORES); stop the holder if it "
                          "should not be running", docs=docs, details={"holders": busy})
    held = ", none held" if facts.neuron_ls is not None else " (holders not listed: no neuron-ls)"
    what += "" if src == "neuron-ls" else f" (from {len(nodes)} devices' sysfs core counts)"
    return result("driver.cores", "pass", what + held, observed=observed,
                  expected=expected)
