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
    "driver.states": "no Neuron apt package is used",
    "driver.dkms": "no Neuron driver is used",
    "tools.path": "the Neuron tools are not used",
    "container.devices": "no Neuron device is passed in",
    "net.efa": "no EFA is used",
}


def neuron_instance(facts: HostFacts, m: Matrix) -> str | None:
    """The Neuron instance type this host is (a family the matrix lists), or None. A host
    fact: "not applicable" verdicts come from host facts only, never from the packages a venv
    holds (issue #45, finding 4: a left-over emulator on a broken trn2 must not skip its
    hardware checks)."""
    from neuron_env.matrix.model import family_of

    t = facts.instance.type
    return t if t and m.family(family_of(t)) is not None else None


def emulated(facts: HostFacts, m: Matrix) -> str | None:
    """Why this is a rehearsal (the words verdicts start with), or None. Hardware facts
    outrank package facts: a Neuron device or a Neuron instance type is judged as Trainium."""
    t = facts.target
    emu = t.dist(EMULATOR) if t.usable else None
    if emu is None or facts.driver.device_nodes or neuron_instance(facts, m):
        return None
    real = t.dist("torch-neuronx")
    if real is not None and not m.placeholder(real.name, real.version):
        return None  # backend.emulator fails this mix; judge it as a Trainium env
    return "emulated rehearsal"


def judge(id_: str, category: str, facts: HostFacts, why: str,
          m: Matrix | None = None) -> Result | None:
    """The rehearsal's verdict for `id_`, or None where the check judges it itself."""
    if id_ in NOT_USED:
        return Result(id_, category, "skip", f"{NOT_USED[id_]} ({why})")
    if id_ == "python.version":
        r = _python(facts, why)
        return _on_trainium(r, facts, m) if m is not None else r
    return None


def _on_trainium(r: Result, facts: HostFacts, m: Matrix) -> Result:
    """What would differ on Trainium, said with the rehearsal's Python verdict (#44): the
    release's Python range (in the summary when this Python is outside it), compile time, the
    ops the release does not lower, memory per NeuronCore."""
    from neuron_env.matrix.model import python_range
    from neuron_env.util.record import replace

    v = facts.target.version or ""
    rng = python_range(m)
    fits = m.python.contains(v, prereleases=True)
    differs = [
        f"Python: {v} here; Neuron {m.release} on Trainium needs {rng}"
        + ("" if fits else " (make the Trainium venv on such a Python)"),
        "compile time: on Trainium each new graph or shape is compiled by neuronx-cc first "
        "(minutes; kept in the compile cache), the emulator runs eagerly",
        f"ops: an op Neuron {m.release} does not lower runs on the CPU or fails on Trainium; "
        "the emulator runs every op (neuron-env scan lists the ones it knows)",
        "memory: each NeuronCore has its own device memory (neuron-env instance TYPE shows "
        "it per core), the emulator uses host RAM",
    ]
    summary = r.summary if fits else (
        f"{r.summary}; on Trainium Neuron {m.release} needs Python {rng}")
    out: Result = replace(r, summary=summary,
                          details={**(r.details or {}), "on_trainium": differs})
    return out


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
