"""tools.path: neuron-ls, neuron-top and neuronx-cc reachable on PATH."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.checks import fixes as _fixes
from neuron_env.checks import pkgfix
from neuron_env.checks.driver import _not_neuron_host, apt_fix
from neuron_env.checks.fixes import apt_get_install
from neuron_env.checks.registry import check, result
from neuron_env.probes.tools import NEURON_BIN
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.checks.registry import Context
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts
    from neuron_env.probes.host import DriverFacts
    from neuron_env.probes.tools import ToolsFacts

SYSTEM_TOOLS = ("neuron-ls", "neuron-top")


def package_fix(facts: HostFacts, m: Matrix, names: list[str],
                flags: str = "-y") -> tuple[str, str | None]:
    """(fix, fix_command) for missing Neuron apt packages: `apt-get install` at the release's
    pins where the Neuron apt repository serves this OS; elsewhere (Debian, Amazon Linux, ...)
    the same words driver.module and driver.packages say, and no command: advice that tells a
    Debian host to apt-get install what its repositories do not have contradicts itself."""
    if pkgfix.family(facts) == "rpm":  # dnf/yum from Neuron's yum repository, never apt
        cmd = (pkgfix.reinstall(facts, names) if "--reinstall" in flags
               else pkgfix.install(facts, m, names))
        return cmd, cmd
    if _fixes.apt_install(facts, m, names) is None:
        return apt_fix(facts, m, names)["fix"], None
    cmd = apt_get_install(m, names, flags)
    return cmd, cmd


def _system(t: ToolsFacts, d: DriverFacts) -> tuple[list[str], list[str]]:
    """(not on PATH but in /opt/aws/neuron/bin, missing altogether)."""
    off_path: list[str] = []
    missing: list[str] = []
    for name in SYSTEM_TOOLS:
        if t.on_path.get(name):
            continue
        (off_path if t.in_neuron_bin.get(name) else missing).append(name)
    return off_path, missing


@check("tools.path", "tools")
def tools_path(facts: HostFacts, m: Matrix, ctx: Context) -> Result:
    """neuron-ls, neuron-top, neuronx-cc reachable on PATH."""
    t, d = facts.tools, facts.driver
    if t is None:
        return result("tools.path", "skip", "tools not probed")
    why = _not_neuron_host(facts, m)
    tools_pkg = d.packages.get("aws-neuronx-tools")
    if why and not tools_pkg and not any(t.on_path.values()):
        return result("tools.path", "skip", f"{why}: no Neuron tools expected")
    off_path, missing = _system(t, d)
    observed = {"on_path": t.on_path, "in_" + NEURON_BIN: t.in_neuron_bin,
                "in_venv": {k: v for k, v in t.in_venv.items() if v}}
    problems, fixes = [], []
    fix_cmd: str | None = None
    if missing:
        problems.append(f"{', '.join(missing)} not found (aws-neuronx-tools "
                        f"{'installed but incomplete' if tools_pkg else 'not installed'})")
        fix, fix_cmd = package_fix(facts, m, ["aws-neuronx-tools"],
                                   "-y --reinstall" if tools_pkg else "-y")
        fixes.append(fix)
    # in /opt/aws/neuron/bin, where aws-neuronx-tools installs them, but not on this PATH:
    # health checks (slurmd, node-problem-detector) run without a login environment, so
    # /etc/profile.d never put it there: the node is fine, the shell is not (a warning)
    off = (f"{', '.join(off_path)} in {NEURON_BIN} (where aws-neuronx-tools installs them) "
           "but not on this PATH (no login environment? /etc/profile.d is read by login "
           "shells only)") if off_path else None
    off_fix = (f"export PATH={NEURON_BIN}:$PATH (and add it to /etc/profile.d/neuron.sh "
               "or ~/.bashrc)")
    cc_note = None
    if not t.on_path.get("neuronx-cc"):
        if t.in_venv.get("neuronx-cc"):
            cc_note = (f"neuronx-cc is in the target venv ({t.in_venv['neuronx-cc']}) but not "
                       "on PATH: activate the venv for command-line use")
        elif facts.target.usable and facts.target.dist("neuronx-cc") is None:
            cc_note = "neuronx-cc is not installed (see backend.tools)"
    if problems:
        return result("tools.path", "fail", "; ".join(problems + ([off] if off else [])),
                      observed=observed, fix="; ".join(fixes + ([off_fix] if off else [])),
                      docs=m.doc("install_troubleshooting"), fix_command=fix_cmd,
                      details={"neuronx-cc": cc_note} if cc_note else None)
    if off:
        return result("tools.path", "warn", off + (f"; {cc_note}" if cc_note else ""),
                      observed=observed, fix=off_fix, docs=m.doc("install_troubleshooting"))
    if cc_note:
        return result("tools.path", "warn", f"neuron-ls, neuron-top on PATH; {cc_note}",
                      observed=observed, fix="source <venv>/bin/activate, or put the venv's "
                      "bin/ on PATH")
    return result("tools.path", "pass", "neuron-ls, neuron-top and neuronx-cc on PATH",
                  observed=observed)
