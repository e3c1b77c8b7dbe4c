# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib +
# torch. Looking closer: the first module whose output leaves tolerance, the user's source line
# of each fallback op, and the greedy decode check of --generate.
import contextlib
import traceback

from _shared import step
from _trial_common import add, cause_of, short, tb_text, user_frame, user_frames, where
from _trial_compare import compare_low, compare_one, flatten, host
from _trial_device import tracked


def module_outputs(torch, model, inputs, ctx=contextlib.nullcontext, seed=None):
    """(the model's floating outputs, [(qualified name, first floating input, first floating
    output)] in the order the modules finish), all copied to the host, of one forward without
    grad (under manual_seed(seed) when given); an input is None when it holds no float."""
    seen, hooks = [], []

    def first_float(x):
        return next((v for _, v in flatten(x) if v.is_floating_point()), None)

    def hook(name):
        def fn(_mod, args, kwargs, result):
            y = first_float(result)
            if y is not None:
                x = first_float((args, kwargs))
                seen.append((name, None if x is None else host(x).clone(), host(y).clone()))
        return fn
    for name, m in model.named_modules():
        if name:
            hooks.append(m.register_forward_hook(hook(name), with_kwargs=True))
    if seed is not None:
        torch.manual_seed(seed)
    try:
        with ctx(), torch.no_grad():
            out = [host(x) for _, x in flatten(model(*inputs[0], **inputs[1]))
                   if x.is_floating_point()]
    finally:
        for h in hooks:
            h.remove()
    return out, seen


def random_modules(torch, model, inputs, seed):
    """What draws random numbers when the model runs, found by running it: the model (a float32
    CPU copy) runs twice under two seeds with forward hooks on every module. [] when both runs
    agree; else the modules whose output differs although their input did not (the innermost
    ones: a dropout, not the layer holding it), or one note when the output differs but no
    single module shows it. Attribute names (a config's `mask_time_prob`) say nothing: only
    what runs counts."""
    (out1, seen1), (out2, seen2) = (module_outputs(torch, model, inputs, seed=s)
                                    for s in (seed + 101, seed + 202))

    def same(a, b):
        return a is not None and b is not None and a.shape == b.shape and bool(torch.equal(a, b))
    if len(out1) == len(out2) and all(same(a, b) for a, b in zip(out1, out2, strict=True)):
        return []
    flagged = [n1 for (n1, x1, y1), (n2, x2, y2) in zip(seen1, seen2, strict=False)
               if n1 == n2 and ((x1 is None and x2 is None) or same(x1, x2))
               and not same(y1, y2)]
    names = list(dict.fromkeys(flagged))
    inner = [n for n in names if not any(o != n and o.startswith(n + ".") for o in names)]
    return inner or ["(the output changes with the random seed)"]


def merged_order(ref, dev):
    """[(name, side)] of both runs in execution order, side "both", "device" (ran on the
    device path only: a branch on x.device.type) or "cpu" (ran on the CPU only)."""
    in_ref, in_dev = {n for n, _, _ in ref}, {n for n, _, _ in dev}
    out, i, j = [], 0, 0
    while i < len(ref) or j < len(dev):
        r = ref[i][0] if i < len(ref) else None
        d = dev[j][0] if j < len(dev) else None
        if r is not None and r not in in_dev:
            out.append((r, "cpu"))
            i += 1
        elif d is not None and d not in in_ref:
            out.append((d, "device"))
            j += 1
        else:
            if d is not None:
                out.append((d, "both"))
                j += 1
            if r is not None and r == d:
                i += 1
            elif r is not None and d is None:
                out.append((r, "both"))
                i += 1
    return list(dict.fromkeys(out))


def changes_numbers(torch, x, y):
    """A module that ran on one side only changes the numbers unless its output equals its
    input (an identity, a view, a dtype no-op)."""
    return x is None or tuple(x.shape) != tuple(y.shape) or not bool(torch.equal(x, y))


def first_divergence(t):
    """The first module (in execution order) whose forward output leaves tolerance, or that
    runs on one side only and changes the numbers: where the device's results start to differ
    from the CPU's."""
    torch = t.torch
    try:
        _, ref = module_outputs(torch, t.prepared(t.initial).float(), t.float_inputs())
        _, dev = module_outputs(torch, t.to_device(t.initial), t.device_inputs(), t.ctx)
        low = None
        if t.low_precision:
            cpu = torch.device("cpu")
            low = {n: y for n, _, y in module_outputs(
                torch, t.to_device(t.initial, cpu), t.device_inputs(device=cpu),
                lambda: t.ctx(cpu))[1]}
    except Exception as e:
        return {"module": None, "why": "the per-module run failed: %s" % short(e)}
    refd = {n: (x, y) for n, x, y in ref}
    devd = {n: (x, y) for n, x, y in dev}
    types = {n: type(m).__name__ for n, m in t.initial.named_modules()}
    order = merged_order(ref, dev)
    for i, (name, side) in enumerate(order):
        if side != "both":
            x, y = (devd if side == "device" else refd)[name]
            if changes_numbers(torch, x, y):
                delta = float((y - x).abs().max()) if x is not None and \
                    tuple(x.shape) == tuple(y.shape) else None
                why = ("runs on the %s only (a branch on the device type) and changes its "
                       "input%s" % ("device path" if side == "device" else "CPU",
                                    " by up to %.3g" % delta if delta is not None else ""))
                return {"module": name, "module_type": types.get(name), "order": i,
                        "modules": len(order), "why": why, "side": side,
                        "max_abs_change": delta}
            continue
        want, got = refd[name][1], devd[name][1]
        c = (compare_low(torch, got, want, low.get(name), None, None) if low is not None
             else compare_one(torch, got, want, t.rtol, t.atol))
        if not c["ok"]:
            why = ("max abs err %.3g vs the CPU's %.3g at this dtype" % (
                c.get("max_abs_error", 0), c.get("cpu_error", 0)) if low is not None else
                "%s of %s elements outside tolerance, max abs err %.3g" % (
                    c.get("mismatched"), c.get("elements"), c.get("max_abs_error", 0)))
            if c.get("shape"):
                why = "shape %s vs %s" % tuple(c["shape"])
            return {"module": name, "module_type": types.get(name), "order": i,
                    "modules": len(order), "why": why, "side": "both",
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
    """A decoder model's greedy decode of N tokens with its KV cache, on the CPU and on the
    device: do the tokens agree, and where do they first differ. At a reduced dtype the device
    is judged against the CPU at that dtype (as every other comparison in that mode: #48.6),
    the float32 CPU's agreement reported beside it."""
    step("generate")
    n = int(t.opts.get("generate") or 0)
    if not callable(getattr(t.initial, "generate", None)):
        add("generate", "skip", "--generate needs a model with generate() (a Hugging Face "
            "causal LM); %s has none" % type(t.initial).__name__)
        return
    torch, cpu = t.torch, t.torch.device("cpu")
    cfg = getattr(t.initial, "generation_config", None)
    own_pad = getattr(cfg, "pad_token_id", None) is not None
    extra = {} if own_pad else {"pad_token_id": 0}

    def decode(model, inputs):
        args, kwargs = inputs
        with torch.no_grad(), t.ctx(next(model.parameters()).device):
            out = model.generate(*args, **kwargs, max_new_tokens=n, do_sample=False,
                                 use_cache=True, **extra)
        return out.detach().to("cpu")
    try:
        f32 = decode(t.prepared(t.initial).float().eval(), t.float_inputs())
        ref = decode(t.to_device(t.initial, cpu).eval(), t.device_inputs(device=cpu)) \
            if t.low_precision else f32
    except Exception as e:
        at = user_frame(e)
        add("generate", "fail", "generate() fails on the CPU: %s%s" % (
            cause_of(e), "; at %s" % at if at else ""), error=tb_text(e), root_cause=cause_of(e),
            user_frame=at, side="cpu")
        return
    try:
        with tracked(t, "generate"):
            got = decode(t.to_device(t.initial).eval(), t.device_inputs())
    except Exception as e:
        at = user_frame(e)
        add("generate", "fail", "generate() on %s CRASHED (the CPU ran it): %s%s" % (
            t.device, cause_of(e), "; at %s" % at if at else ""), error=tb_text(e),
            crashed=True, root_cause=cause_of(e), user_frame=at, side="device")
        return
    judge_tokens(t, n, ref, got, f32, own_pad)


def _agreement(ref, got, n):
    """(share of new tokens equal, 0-based index of the first differing one, all equal)."""
    prompt = ref.shape[-1] - n
    a = ref[..., prompt:]
    if got.shape != ref.shape:
        return 0.0, 0, False
    same = a == got[..., prompt:]
    first = next((i for i in range(a.shape[-1]) if not bool(same[..., i].all())), None)
    return float(same.float().mean()), first, bool(same.all())


def judge_tokens(t, n, ref, got, f32, own_pad):
    prompt = ref.shape[-1] - n
    agree, first, ok = _agreement(ref, got, n)
    against = "the CPU at %s" % ("autocast(bfloat16)" if t.opts.get("autocast") else
                                  t.dtype_name) if t.low_precision else "the CPU"
    f32_agree = _agreement(f32, got, n)[0] if t.low_precision else None
    notes = ("; %.0f%% agree with the float32 CPU" % (100 * f32_agree)
             if f32_agree is not None else "")
    if not own_pad:
        notes += ("; pad_token_id=0 was passed to generate() (the model's generation config "
                  "has none)")
    add("generate", "pass" if ok else "fail", "%d greedy decode steps with the KV cache: %s%s"
        % (n, "every token agrees with %s" % against if ok else
           "%.0f%% of tokens agree with %s; first differs at new token %d of %d (0-based "
           "step %d)" % (100 * agree, against, (first or 0) + 1, n, first or 0), notes),
        steps=n, agreement=agree, first_divergent_step=first,
        first_divergent_token=None if first is None else first + 1, compared_with=against,
        float32_agreement=f32_agree, pad_token_id=None if own_pad else 0,
        cpu_tokens=ref[..., prompt:].tolist(), device_tokens=got[..., prompt:].tolist(),
        float32_cpu_tokens=f32[..., prompt:].tolist() if t.low_precision else None)
