# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib +
# torch. Looking closer: the first module whose output leaves tolerance, the user's source line
# of each fallback op, and the greedy decode check of --generate.
import contextlib
import traceback

from _shared import step
from _trial_common import add, short, tb_text, user_frames, where
from _trial_compare import compare_low, compare_one, flatten, host


def module_outputs(t, model, inputs, ctx):
    """[(qualified name, first floating output on the host)] in execution order."""
    torch, seen, hooks = t.torch, [], []

    def hook(name):
        def fn(_mod, _inp, out):
            first = next((x for _, x in flatten(out) if x.is_floating_point()), None)
            if first is not None:
                seen.append((name, host(first)))
        return fn
    for name, m in model.named_modules():
        if name:
            hooks.append(m.register_forward_hook(hook(name)))
    try:
        with ctx(), torch.no_grad():
            model(*inputs[0], **inputs[1])
    finally:
        for h in hooks:
            h.remove()
    return seen


def first_divergence(t):
    """The first module (in execution order) whose forward output leaves tolerance: where the
    device's results start to differ from the CPU's."""
    torch = t.torch
    try:
        ref = module_outputs(t, t.prepared(t.initial).float(), t.float_inputs(),
                             contextlib.nullcontext)
        dev = module_outputs(t, t.to_device(t.initial), t.device_inputs(), t.ctx)
        low = None
        if t.low_precision:
            cpu = torch.device("cpu")
            low = dict(module_outputs(t, t.to_device(t.initial, cpu), t.device_inputs(
                device=cpu), lambda: t.ctx(cpu)))
    except Exception as e:
        return {"module": None, "why": "the per-module run failed: %s" % short(e)}
    devd = dict(dev)
    for i, (name, want) in enumerate(ref):
        got = devd.get(name)
        if got is None:
            continue
        c = (compare_low(torch, got, want, low.get(name), None, None) if low is not None
             else compare_one(torch, got, want, t.rtol, t.atol))
        if not c["ok"]:
            why = ("max abs err %.3g vs the CPU's %.3g at this dtype" % (
                c.get("max_abs_error", 0), c.get("cpu_error", 0)) if low is not None else
                "%s of %s elements outside tolerance, max abs err %.3g" % (
                    c.get("mismatched"), c.get("elements"), c.get("max_abs_error", 0)))
            if c.get("shape"):
                why = "shape %s vs %s" % tuple(c["shape"])
            return {"module": name, "module_type": type(dict(t.initial.named_modules())[name])
                    .__name__, "order": i, "modules": len(ref), "why": why,
                    **{k: v for k, v in c.items() if k != "excess"}}
    return None


def fallback_sources(t, ops):
    """For each fallback op, the user's source lines that called it: the forward runs once more
    under a dispatch mode that takes the Python stack at each of those ops."""
    from torch.utils._python_dispatch import TorchDispatchMode
    wanted, found = set(ops), {}

    class Where(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "_schema", None)
            name = name.name if name is not None else str(func)
            if name in wanted:
                frames = user_frames(traceback.extract_stack()[:-1])
                if frames:
                    lines = found.setdefault(name, [])
                    line = where(frames[-1])
                    if line not in lines and len(lines) < 5:
                        lines.append(line)
            return func(*args, **(kwargs or {}))
    try:
        model, inputs = t.to_device(t.initial), t.device_inputs()
        with Where(), t.ctx(), t.torch.no_grad():
            model(*inputs[0], **inputs[1])
    except Exception as e:
        return {"error": short(e)}
    return found


def generate_step(t):
    """A decoder model's greedy decode of N tokens with its KV cache, on the CPU (float32) and
    on the device: do the tokens agree, and where do they first differ."""
    step("generate")
    n = int(t.opts.get("generate") or 0)
    if not callable(getattr(t.initial, "generate", None)):
        add("generate", "skip", "--generate needs a model with generate() (a Hugging Face "
            "causal LM); %s has none" % type(t.initial).__name__)
        return
    torch = t.torch

    def decode(model, inputs):
        args, kwargs = inputs
        with torch.no_grad(), t.ctx(next(model.parameters()).device):
            out = model.generate(*args, **kwargs, max_new_tokens=n, do_sample=False,
                                 use_cache=True, pad_token_id=0)
        return out.detach().to("cpu")
    try:
        ref = decode(t.prepared(t.initial).float().eval(), t.float_inputs())
    except Exception as e:
        add("generate", "fail", "generate() fails on the CPU: %s" % short(e), error=tb_text(e))
        return
    try:
        got = decode(t.to_device(t.initial).eval(), t.device_inputs())
    except Exception as e:
        add("generate", "fail", "generate() on %s CRASHED (the CPU ran): %s" % (
            t.device, short(e)), error=tb_text(e), crashed=True)
        return
    prompt = ref.shape[-1] - n
    a = ref[..., prompt:]
    b = got[..., prompt:] if got.shape == ref.shape else None
    same = (a == b) if b is not None else None
    agree = float(same.float().mean()) if same is not None else 0.0
    first = next((i for i in range(a.shape[-1]) if not bool(same[..., i].all())), None) \
        if same is not None else 0
    ok = same is not None and bool(same.all())
    add("generate", "pass" if ok else "fail", "%d greedy decode steps with the KV cache: %s" % (
        n, "every token agrees with the CPU" if ok else
        "%.0f%% of tokens agree; first differs at step %s" % (100 * agree, first)),
        steps=n, agreement=agree, first_divergent_step=first,
        cpu_tokens=a.tolist(), device_tokens=got[..., prompt:].tolist())
