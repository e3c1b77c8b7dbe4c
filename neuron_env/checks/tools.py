"""tools.path: neuron-ls, neuron-top and neuronx-cc reachable on PATH."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.checks.driver import _not_neuron_host
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
    if off_path:
        problems.append(f"{', '.join(off_path)} in {NEURON_BIN} but not on PATH")
        fixes.append(f"export PATH={NEURON_BIN}:$PATH (and add it to "
                     "/etc/profile.d/neuron.sh or ~/.bashrc)")
    if missing:
        problems.append(f"{', '.join(missing)} not found (aws-neuronx-tools "
                        f"{'installed but incomplete' if tools_pkg else 'not installed'})")
        fixes.append(apt_get_install(m, ["aws-neuronx-tools"],
                                     "-y --reinstall" if tools_pkg else "-y"))
    cc_note = None
    if not t.on_path.get("neuronx-cc"):
        if t.in_venv.get("neuronx-cc"):
            cc_note = (f"neuronx-cc is in the target venv ({t.in_venv['neuronx-cc']}) but not "
                       "on PATH: activate the venv for command-line use")
        elif facts.target.usable and facts.target.dist("neuronx-cc") is None:
            cc_note = "neuronx-cc is not installed (see backend.tools)"
    if problems:
        return result("tools.path", "fail", "; ".join(problems), observed=observed,
                      fix="; ".join(fixes), docs=m.doc("install_troubleshooting"),
                      fix_command=fixes[-1] if missing else None,
                      details={"neuronx-cc": cc_note} if cc_note else None)
    if cc_note:
        return result("tools.path", "warn", f"neuron-ls, neuron-top on PATH; {cc_note}",
                      observed=observed, fix="source <venv>/bin/activate, or put the venv's "
                      "bin/ on PATH")
    return result("tools.path", "pass", "neuron-ls, neuron-top and neuronx-cc on PATH",
                  observed=observed)
