"""driver.module, driver.packages, driver.devices (instance.aws is checks/aws.py)."""

from __future__ import annotations

from neuron_env.checks import check
from neuron_env.report.model import Result


def apt_fix(facts, m, names: list[str] | None = None) -> dict:
    """fix/fix_command: the Neuron apt repository set up for this host's codename, then the
    packages; where the host is not apt-based, what to do by hand."""
    from neuron_env.checks import fixes

    cmd = fixes.apt_install(facts, m, names)
    if cmd is None:
        return {"fix": f"{facts.os.pretty_name or facts.os.id or 'this OS'} has no Neuron apt "
                       "repository: use a supported Ubuntu (see os.release), then install "
                       "aws-neuronx-dkms and the tools from " + fixes.APT_REPO}
    return {"fix": cmd + fixes.chroot_note(facts), "fix_command": cmd}


def _image(facts) -> bool:
    """A mounted image under --root: it has no live /sys, so nothing is loaded or visible."""
    return facts.root.explicit and not facts.driver.sysfs_present


def _not_neuron_host(facts, m) -> str | None:
    """Why device checks cannot apply here, or None."""
    inst = facts.instance
    if inst.type and m.instance_type(inst.type)[0] is None:
        return f"{inst.type} is not a Neuron instance"
    return None


@check("driver.module", "driver")
def driver_module(facts, m, ctx) -> Result:
    d = facts.driver
    dkms = d.packages.get("aws-neuronx-dkms")
    old = d.packages.get("aws-neuron-dkms")
    observed = {"module_version": d.module_version, "aws-neuronx-dkms": dkms}
    docs = m.doc("setup")
    if old:
        return Result("driver.module", "driver", "fail",
                      f"the old aws-neuron-dkms {old} is installed; it conflicts with "
                      "aws-neuronx-dkms", observed=observed,
                      fix=(cmd := "sudo apt-get remove -y aws-neuron-dkms && sudo apt-get "
                                  "install -y aws-neuronx-dkms"), fix_command=cmd, docs=docs)
    pin = next((a.version for a in m.driver.apt if a.name == "aws-neuronx-dkms"), None)
    image = _image(facts)
    if facts.instance.assumed or image:
        # A build host or a mounted image: the module cannot be loaded here; judge the package.
        where = "the image" if image else "this build host"
        if dkms:
            return Result("driver.module", "driver", "pass",
                          f"aws-neuronx-dkms {dkms} installed in {where} (loading not checked: "
                          f"{'mounted image' if image else 'assumed instance type'})",
                          observed=observed, expected=pin)
        if not d.dpkg_present:
            return Result("driver.module", "driver", "skip",
                          f"no dpkg status in {where}: the driver package cannot be checked")
        return Result("driver.module", "driver", "fail",
                      f"aws-neuronx-dkms is not installed in {where}", observed=observed,
                      docs=docs, **apt_fix(facts, m))
    why = _not_neuron_host(facts, m)
    if why and not d.module_version and not dkms:
        return Result("driver.module", "driver", "skip", f"{why}: no Neuron driver expected")
    if d.module_version:
        extra = f" (aws-neuronx-dkms {dkms})" if dkms else ""
        if pin and dkms and dkms.split("-")[0] != pin:
            return Result("driver.module", "driver", "warn",
                          f"neuron module {d.module_version} loaded, but aws-neuronx-dkms "
                          f"{dkms} differs from the release's {pin}", observed=observed,
                          expected=pin, fix_command=(cmd := "sudo apt-get install -y "
                                                           f"'aws-neuronx-dkms={pin}*'"),
                          fix=cmd)
        return Result("driver.module", "driver", "pass",
                      f"neuron module {d.module_version} loaded{extra}", observed=observed,
                      expected=pin)
    if dkms:
        return Result("driver.module", "driver", "fail",
                      f"aws-neuronx-dkms {dkms} is installed but the neuron module is not "
                      "loaded", observed=observed,
                      fix=(cmd := 'sudo modprobe neuron || { sudo apt-get install -y '
                                  '"linux-headers-$(uname -r)" && sudo dpkg-reconfigure '
                                  'aws-neuronx-dkms && sudo modprobe neuron; }'),
                      fix_command=cmd, docs=docs)
    return Result("driver.module", "driver", "fail",
                  "the Neuron driver is not installed (no neuron module, no aws-neuronx-dkms)",
                  observed=observed, docs=docs, **apt_fix(facts, m))


@check("driver.packages", "driver")
def driver_packages(facts, m, ctx) -> Result:
    d = facts.driver
    if not m.driver.apt:
        return Result("driver.packages", "driver", "skip", "the matrix lists no apt packages")
    if not d.dpkg_present:
        return Result("driver.packages", "driver", "skip",
                      "no dpkg status (var/lib/dpkg/status): not a Debian/Ubuntu system")
    why = _not_neuron_host(facts, m)
    if why and not d.packages:
        return Result("driver.packages", "driver", "skip", f"{why}: no Neuron packages expected")
    missing, differ = [], []
    for a in m.driver.apt:
        have = d.packages.get(a.name)
        if have is None:
            missing.append(a.name)
        elif a.version and not have.startswith(a.version):
            differ.append(f"{a.name} {have} (release: {a.version})")
    observed = {a.name: d.packages.get(a.name) for a in m.driver.apt}
    expected = {a.name: a.version or "any" for a in m.driver.apt}
    if missing:
        return Result("driver.packages", "driver", "warn",
                      f"missing apt packages: {', '.join(missing)}", observed=observed,
                      expected=expected, **apt_fix(facts, m, missing))
    if differ:
        return Result("driver.packages", "driver", "warn",
                      f"versions differ from the release: {'; '.join(differ)}",
                      observed=observed, expected=expected)
    return Result("driver.packages", "driver", "pass",
                  ", ".join(f"{k} {v}" for k, v in observed.items()), observed=observed,
                  expected=expected)


@check("driver.devices", "driver")
def driver_devices(facts, m, ctx) -> Result:
    d, inst = facts.driver, facts.instance
    if inst.assumed:
        return Result("driver.devices", "driver", "skip",
                      f"instance type assumed ({inst.type}): devices of the target cannot be "
                      "seen from this host")
    if _image(facts):
        return Result("driver.devices", "driver", "skip",
                      f"{facts.root.path} has no sys/: a mounted image shows no devices")
    why = _not_neuron_host(facts, m)
    nodes = len(d.device_nodes)
    if why and nodes == 0:
        return Result("driver.devices", "driver", "skip", f"{why}: no Neuron devices expected")
    typ = m.instance_type(inst.type)[1] if inst.type else None
    expected = typ.devices if typ else None
    nls = facts.neuron_ls
    listed = len(nls.devices) if nls and nls.devices is not None else None
    observed = {"device_nodes": nodes, "sysfs_devices": len(d.sysfs_devices),
                "neuron_ls_devices": listed,
                "cores": [x.core_count for x in d.sysfs_devices] or None}
    note = f"; neuron-ls: {nls.error}" if nls and nls.error and nls.path else ""
    if nodes == 0:
        return Result("driver.devices", "driver", "fail",
                      "no Neuron devices visible (/dev/neuron* missing)"
                      + (f" on {inst.type}, which should have {expected}" if expected else "")
                      + note, observed=observed, expected=expected,
                      fix="load the driver (sudo modprobe neuron) and check that this is a "
                          "Trn2/Trn3 instance; inside a container pass --device=/dev/neuron0 …")
    if expected is not None and nodes != expected:
        return Result("driver.devices", "driver", "fail",
                      f"{nodes} of {expected} Neuron devices visible on {inst.type}{note}",
                      observed=observed, expected=expected,
                      fix="check 'neuron-ls' and dmesg for devices that failed to initialise; "
                          "a container may have been given only some /dev/neuron* nodes")
    if listed is not None and listed != nodes:
        return Result("driver.devices", "driver", "warn",
                      f"{nodes} device nodes but neuron-ls lists {listed}", observed=observed,
                      expected=expected)
    if nls and nls.error and nls.path:
        return Result("driver.devices", "driver", "warn",
                      f"{nodes} Neuron device{'s' if nodes != 1 else ''} visible{note}",
                      observed=observed, expected=expected,
                      fix="reinstall aws-neuronx-tools; if neuron-ls hangs, check dmesg")
    return Result("driver.devices", "driver", "pass",
                  f"{nodes} Neuron device{'s' if nodes != 1 else ''} visible"
                  + (f" (as expected for {inst.type})" if expected else ""),
                  observed=observed, expected=expected)
