# Shared by the scripts that run INSIDE the target interpreter (smoke.py, trial.py,
# collectives.py): stdlib only, Python 3.10+. Each script puts its own folder on sys.path first
# (see `import_shared` there), so this loads even under PYTHONSAFEPATH.
import json
import sys

MARKER = "@@NEURON_ENV_JSON@@"  # the JSON document travels between two of these on stdout


def step(name):
    """Say which step runs now: a runner that kills us at a timeout can tell where we hung."""
    sys.stderr.write("@@STEP %s@@\n" % name)
    sys.stderr.flush()


def emit(doc, **dumps):
    """The one JSON document, between markers, on stdout."""
    sys.stdout.write("\n" + MARKER + json.dumps(doc, **dumps) + MARKER + "\n")
    sys.stdout.flush()


def sync(torch, device):
    """Wait for the device: cuda's own call, or the PrivateUse1 module's (torch.neuron)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type != "cpu":
        mod = getattr(torch, device.type, None)
        if mod is not None and hasattr(mod, "synchronize"):
            mod.synchronize()


def pick_device(torch, want, local_rank, unseen=RuntimeError):
    """The device a rank runs on: `want` ("cpu", "neuron", "cuda", ...) at local_rank modulo
    the visible count, made current; `unseen(message)` is raised when none is visible (each
    script passes its own error class). One copy for collectives.py and trial_dist.py."""
    if want == "cpu":
        return torch.device("cpu")
    mod = getattr(torch, want, None)
    count = mod.device_count() if mod is not None and hasattr(mod, "device_count") else 0
    if count < 1:
        raise unseen("no %s device visible to this process" % want)
    index = local_rank % count
    if hasattr(mod, "set_device"):
        mod.set_device(index)
    return torch.device(want, index)
