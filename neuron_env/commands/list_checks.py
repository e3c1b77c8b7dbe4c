"""`doctor --list-checks`: every check id, its category, what it checks and its docs link."""

from __future__ import annotations

from neuron_env import checks
from neuron_env.matrix import catalog
from neuron_env.report.envelope import envelope
from neuron_env.report.model import CATEGORIES, Document

SCHEMA = "neuron-env.checks/1"
OPT_IN = {"instance.aws": ("instance", "EC2 DescribeInstanceTypes agrees with the matrix (--aws)"),
          "smoke.device": ("smoke", "a small matmul on the device matches the CPU (--smoke)"),
          "collectives.all_reduce": ("collectives", "all_reduce across the local devices "
                                     "gives the right sums (--smoke --collectives)")}
ABOUT = {
    "driver.versions": "aws-neuronx dkms/runtime/collectives/tools vs the release",
    "driver.cores": "logical NeuronCores vs neuron-ls; stale core holders",
    "backend.lineage": "no XLA-era torch-neuronx or torch_xla beside the native backend",
    "backend.collectives": "aws-neuronx-collectives present and matching the release",
    "tools.path": "neuron-ls, neuron-top, neuronx-cc reachable on PATH",
    "container.devices": "inside a container: the /dev/neuron* nodes passed in",
    "cache.compile": "compile cache/debug directories writable, with free space",
    "net.efa": "EFA devices and the libfabric efa provider, where the type has EFA",
    "instance.type": "the instance type (flag, DMI, IMDS) is a family this release supports",
    "os.release": "the OS release is supported, with prebuilt wheels",
    "os.arch": "the machine architecture has Neuron packages",
    "python.version": "the target interpreter runs and its Python is in the release's range",
    "backend.torch": "torch is installed, a version the release pairs, the CPU build",
    "backend.pairing": "torch-neuronx matches the installed torch",
    "backend.origin": "no placeholder or foreign-index Neuron packages; the install finished",
    "backend.tools": "neuronx-cc and nki are installed at the release's versions",
    "backend.emulator": "the CPU-emulated device is not mistaken for Trainium",
    "backend.companions": "torchvision/torchaudio/torchao are builds for the installed torch",
    "driver.module": "the neuron kernel module is loaded (aws-neuronx-dkms)",
    "driver.packages": "the release's apt packages are installed",
    "driver.devices": "/dev/neuron* nodes and neuron-ls agree with the instance type",
    "backend.stack": "libneuronxla, torch-xla and the release's libraries at its versions",
    "backend.torch_neuron": "an Inf1 torch-neuron environment is named, not repaired with "
                            "torch-neuronx",
    "backend.pins": "numpy, optimum within the ranges the installed Neuron packages declare",
    "driver.states": "no Neuron package left half-done (dpkg iF/iU/iH, rpm duplicates)",
    "driver.dkms": "the DKMS driver is built and installed for the running kernel",
    "container.driver": "no driver package inside a container (it belongs on the host)",
    "os.limits": "open-file and locked-memory limits for N ranks (and EFA)",
    "os.libs": "the shared libraries neuronx-cc's compiled modules need are present",
}


def _about(id_: str, fn) -> str:
    doc = (fn.__doc__ or "").strip().splitlines() if fn else []
    return ABOUT.get(id_) or (doc[0] if doc else "")


def rows(matrix: str | None) -> list[dict]:
    m = catalog.select(matrix)
    checks.all_ids()  # loads the registry
    entries: list[tuple[str, str, checks.Check | None]] = [
        (i, c, fn) for i, c, fn in checks.REGISTRY]
    entries += [(i, c, None) for i, (c, _) in OPT_IN.items()]
    return [{"id": i, "category": c, "category_title": CATEGORIES.get(c, c),
             "about": _about(i, fn) or OPT_IN.get(i, ("", ""))[1],
             "docs": m.doc(i) or m.doc(c), "opt_in": fn is None} for i, c, fn in entries]


def text(doc: dict) -> str:
    width = max((len(r["id"]) for r in doc["checks"]), default=10)
    lines = []
    for r in doc["checks"]:
        lines.append(f"{r['id']:<{width}}  {r['about']}" + (" (opt-in)" if r["opt_in"] else ""))
        if r["docs"]:
            lines.append(f"{'':<{width}}  docs: {r['docs']}")
    return "\n".join(lines) + "\n"


def run(matrix: str | None) -> Document:
    body = envelope(SCHEMA, 0, matrix={"release": catalog.select(matrix).release},
                    checks=rows(matrix))
    return Document(body, text)
