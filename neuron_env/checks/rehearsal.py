"""A rehearsal: the emulated backend (neuron-emulator) in the target, on a host with no Neuron
device. Such an environment is judged by the emulator's own rules (its Python and torch range),
and the checks that are about Trainium hardware and AWS's wheels say why they do not apply
instead of failing. Pure: facts -> verdicts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_env.checks.registry import result
from neuron_env.report.model import Result

if TYPE_CHECKING:
    from neuron_env.matrix.model import Matrix
    from neuron_env.probes.facts import HostFacts

EMULATOR = "neuron-emulator"
# the checks about Trainium hardware, the Neuron apt stack or AWS's wheels: what each is not
NOT_USED = {
    "instance.type": "no Trainium instance is needed",
    "os.release": "Neuron's OS support and prebuilt wheels do not apply",
    "backend.pairing": "torch-neuronx is not used (neuron-emulator provides the neuron device)",
    "backend.tools": "neuronx-cc and nki are not used",
    "backend.lineage": "torch-neuronx is not used",
    "backend.collectives": "the Neuron runtime's collectives are not used",
    "driver.module": "no Neuron driver is used",
    "driver.packages": "no Neuron apt package is used",
    "driver.devices": "no Neuron device is used",
    "driver.versions": "no Neuron apt package is used",
    "driver.cores": "no NeuronCore is used",
    "tools.path": "the Neuron tools are not used",
    "container.devices": "no Neuron device is passed in",
    "net.efa": "no EFA is used",
}


def emulated(facts: HostFacts, m: Matrix) -> str | None:
    """Why this is a rehearsal (the words verdicts start with), or None."""
    t = facts.target
    emu = t.dist(EMULATOR) if t.usable else None
    if emu is None or facts.driver.device_nodes:
        return None
    real = t.dist("torch-neuronx")
    if real is not None and not m.placeholder(real.name, real.version):
        return None  # backend.emulator fails this mix; judge it as a Trainium env
    return "emulated rehearsal"


def judge(id_: str, category: str, facts: HostFacts, why: str) -> Result | None:
    """The rehearsal's verdict for `id_`, or None where the check judges it itself."""
    if id_ in NOT_USED:
        return Result(id_, category, "skip", f"{NOT_USED[id_]} ({why})")
    if id_ == "python.version":
        return _python(facts, why)
    return None


def _python(facts: HostFacts, why: str) -> Result:
    from neuron_env.install.emulator_wheel import REQUIRES_PYTHON
    from neuron_env.util.versions import Spec

    t = facts.target
    observed = {"path": t.path, "version": t.version, "venv": t.venv, "prefix": t.prefix,
                "chosen_by": t.chosen_by}
    ok = Spec(REQUIRES_PYTHON).contains(t.version or "", prereleases=True)
    where = f"{t.path} ({'venv' if t.venv else 'not a venv'}, chosen by {t.chosen_by})"
    if ok:
        return result("python.version", "pass",
                      f"Python {t.version} at {where}: fine for the emulator "
                      f"({REQUIRES_PYTHON}; {why})", observed=observed, expected=REQUIRES_PYTHON)
    return result("python.version", "fail",
                  f"Python {t.version} at {where} is outside the emulator's {REQUIRES_PYTHON}",
                  observed=observed, expected=REQUIRES_PYTHON,
                  fix="make the rehearsal venv on a newer Python: neuron-env install "
                      "--backend emulated --venv DIR --python PATH")
