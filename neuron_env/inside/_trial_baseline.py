# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib +
# torch. Baselines: a run's tensors saved on one host, compared on another.
import json
import time

from _shared import open_pending, step
from _trial_common import Usage, add, short
from _trial_compare import TOL, compare_all, verdict

BASELINE_FORMAT = "neuron-env.trial-baseline/1"


def baseline_meta(t, ident):
    return {"format": BASELINE_FORMAT, "model": t.opts.get("model_id") or t.opts["model"],
            "torch": ident["torch"],
            "device": t.device.type, "device_name": ident.get("device_name"),
            "emulated": ident["emulated"], "dtype": t.dtype_name,
            "autocast": bool(t.opts.get("autocast")), "seed": t.opts.get("seed", 0),
            "steps": t.opts.get("steps", 0), "lr": t.opts.get("lr", 0.01),
            "inputs": t.input_shapes(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def save_baseline(t, ident, path):
    step("baseline")
    tensors = {k: v.contiguous() for k, v in dict(t.dev_got, **getattr(t, "dev_params", {}))
               .items() if v is not None}
    meta = baseline_meta(t, ident)
    # the parent made the file (guards/atomic.PendingOutput, the one writer: random, exclusive,
    # next to PATH, 0600) and renames it over PATH once this step passed; it is opened by name,
    # never created, never through a link
    tmp = t.opts.get("save_baseline_tmp")
    try:
        if not tmp:
            raise OSError("no temporary file from neuron-env")
        with open_pending(tmp) as f:
            t.torch.save({"meta": json.dumps(meta), "tensors": tensors}, f)
    except OSError as e:
        raise Usage("--save-baseline %s: cannot write it: %s" % (path, e)) from None
    add("baseline", "pass", "saved %d tensors (outputs, loss, gradients%s) of the %s run to %s"
        % (len(tensors), ", parameters" if t.opts.get("steps") else "", t.device.type, path),
        path=path, saved=meta, saved_tensors=len(tensors))


def load_baseline(torch, path):
    """Tensors and metadata only: torch.load(weights_only=True) executes no pickled code."""
    try:
        doc = torch.load(path, map_location="cpu", weights_only=True)
        meta = json.loads(doc["meta"])
        tensors = doc["tensors"]
        assert meta.get("format") == BASELINE_FORMAT and isinstance(tensors, dict)
        assert all(isinstance(v, torch.Tensor) for v in tensors.values())
    except Exception as e:
        raise Usage("--baseline %s: not a neuron-env trial baseline (%s)" % (path, short(e)),
                    "make one with: neuron-env trial MODEL --device cpu|cuda --save-baseline "
                    "FILE") from None
    return meta, {k: v.float() for k, v in tensors.items()}


def compare_baseline(t, ident, path):
    step("baseline")
    torch = t.torch
    meta, want = load_baseline(torch, path)
    mine = baseline_meta(t, ident)
    for key in ("model", "seed", "inputs"):
        if meta.get(key) != mine[key]:
            raise Usage("--baseline %s was recorded with %s=%s, this run has %s=%s" % (
                path, key, meta.get(key), key, mine[key]), "use the same MODEL and --seed as "
                "the run that saved it")
    rtol, atol = (max(a, b) for a, b in zip(TOL["bfloat16" if meta.get("dtype") == "bfloat16"
                                                or meta.get("autocast") else "float32"],
                                            (t.rtol, t.atol), strict=True))
    got = dict(t.dev_got, **getattr(t, "dev_params", {}))
    common = {k: v for k, v in want.items() if k in got}
    cmp = compare_all(torch, got, common, rtol, atol)
    missing = sorted(set(want) - set(got))
    notes = ["torch %s vs %s" % (meta.get("torch"), mine["torch"])] \
        if meta.get("torch") != mine["torch"] else []
    add("baseline", "pass" if cmp["ok"] else "fail", "vs baseline from %s%s (torch %s, %s): %s%s"
        % (meta.get("device"), " (%s)" % meta["device_name"] if meta.get("device_name") else "",
           meta.get("torch"), meta.get("dtype"), verdict(cmp, rtol, atol),
           "; not in this run: %s" % ", ".join(missing[:5]) if missing else ""),
        path=path, baseline=meta, rtol=rtol, atol=atol, notes=notes, missing=missing, **cmp)
