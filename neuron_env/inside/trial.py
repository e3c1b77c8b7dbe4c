# Runs inside the TARGET interpreter: stdlib + torch only (Python 3.10+). argv[1] is a JSON
# object of options (see neuron_env/trial/options.py). Prints one JSON document between markers
# on stdout; "@@STEP name@@" lines on stderr say which step runs, so a runner that kills us at
# its timeout can name the step that hung.
#
# The MODEL protocol: a callable taking no arguments that returns (model, example_inputs) or
# (model, example_inputs, loss_fn); model is a torch.nn.Module, example_inputs a tuple of
# positional inputs (tensors), loss_fn(output) -> scalar tensor (default: mean of squares of
# every floating output); it runs on the output's device, so a target it closes over must be
# moved there (`y.to(out.device)`). The callable runs after torch.manual_seed(seed), on the CPU.
import copy
import importlib
import importlib.util
import json
import os
import re
import statistics
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _shared.py, even under -P
from _shared import emit, step, sync

# (rtol, atol): atol is relative to the largest magnitude of the reference tensor
TOL = {"float32": (1e-3, 1e-5), "bfloat16": (5e-2, 2e-2)}
BASELINE_FORMAT = "neuron-env.trial-baseline/1"
RESULTS = []
PROTOCOL = ("MODEL must name a callable that takes no arguments and returns (model, "
            "example_inputs) or (model, example_inputs, loss_fn): model a torch.nn.Module, "
            "example_inputs a tuple of tensors, loss_fn(output) -> scalar tensor")


class Usage(Exception):
    def __init__(self, message, hint=None):
        super().__init__(message)
        self.message, self.hint = message, hint




def add(name, status, summary, **data):
    RESULTS.append(dict(name=name, status=status, summary=summary, **data))


def finish(doc):
    emit(dict(doc, results=RESULTS), default=str)


def short(e):
    text = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, text[0][:400] if text else "")


# -- built-in workloads ---------------------------------------------------------------------------
def builtin_mlp(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    return model, (x,), lambda out: nn.functional.cross_entropy(out, y.to(out.device))


def builtin_conv(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3,
                          stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 10))
    return model, (torch.randn(8, 3, 32, 32),)


class _Block:
    """A pre-norm transformer block (attention written out: softmax, bmm, layer norm)."""

    @staticmethod
    def build(torch, dim=128, heads=4):
        nn = torch.nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
                self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
                self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                         nn.Linear(4 * dim, dim))

            def forward(self, x):
                b, t, d = x.shape
                q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
                q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
                att = torch.softmax(q @ k.transpose(-2, -1) / (d // heads) ** 0.5, dim=-1)
                x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
                return x + self.mlp(self.ln2(x))
        return Block()


def builtin_transformer_block(torch):
    return _Block.build(torch), (torch.randn(4, 64, 128),)


def builtin_embedding(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Embedding(1000, 64), nn.LayerNorm(64), nn.Linear(64, 1000))
    ids, target = torch.randint(0, 1000, (8, 32)), torch.randint(0, 1000, (8, 32))
    return model, (ids,), lambda out: nn.functional.cross_entropy(
        out.reshape(-1, 1000), target.to(out.device).reshape(-1))


BUILTINS = {"mlp": builtin_mlp, "conv": builtin_conv,
            "transformer-block": builtin_transformer_block, "embedding": builtin_embedding}


# -- MODEL: import and protocol -------------------------------------------------------------------
def import_callable(spec):
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise Usage("MODEL %r: expected module:callable, path/to/file.py:callable or "
                    "builtin:NAME" % spec)
    try:
        if target.endswith(".py"):
            path = os.path.abspath(target)
            if not os.path.isfile(path):
                raise Usage("MODEL %r: no such file %s" % (spec, path))
            sys.path.insert(0, os.path.dirname(path))
            s = importlib.util.spec_from_file_location("neuron_env_trial_model", path)
            mod = importlib.util.module_from_spec(s)
            s.loader.exec_module(mod)
        else:
            sys.path.insert(0, os.getcwd())
            mod = importlib.import_module(target)
    except Usage:
        raise
    except BaseException as e:  # the user's module: anything it raises is bad input
        tb = traceback.extract_tb(e.__traceback__)
        where = ("%s:%d" % (tb[-1].filename, tb[-1].lineno)) if tb else target
        raise Usage("MODEL %r: importing %s raised %s (at %s)" % (spec, target, short(e), where),
                    "fix the module so that it imports in the target interpreter, or check the "
                    "name (module:callable is imported from the current directory too)") from None
    fn = getattr(mod, attr, None)
    if fn is None or not callable(fn):
        raise Usage("MODEL %r: %s has no callable named %r" % (spec, target, attr), PROTOCOL)
    return fn


def load_model(torch, spec, seed):
    if spec.startswith("builtin:"):
        name = spec.split(":", 1)[1]
        if name not in BUILTINS:
            raise Usage("MODEL %r: no built-in workload %r" % (spec, name),
                        "built-ins: " + ", ".join("builtin:" + b for b in BUILTINS))
        fn = BUILTINS[name]
        torch.manual_seed(seed)
        return check_protocol(torch, fn(torch), spec)
    fn = import_callable(spec)
    torch.manual_seed(seed)
    try:
        got = fn()
    except BaseException as e:
        raise Usage("MODEL %r: calling it raised %s" % (spec, short(e)), PROTOCOL) from None
    return check_protocol(torch, got, spec)


def check_protocol(torch, got, spec):
    def bad(why):
        return Usage("MODEL %r returned %s: %s" % (spec, why, PROTOCOL))
    if not isinstance(got, (tuple, list)) or len(got) not in (2, 3):
        raise bad("a value of type %s" % type(got).__name__ if not isinstance(
            got, (tuple, list)) else "%d values" % len(got))
    model, inputs = got[0], got[1]
    loss_fn = got[2] if len(got) == 3 else None
    if not isinstance(model, torch.nn.Module):
        raise bad("a %s as the model" % type(model).__name__)
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(t, torch.Tensor)
                                                        for t in inputs):
        raise bad("example_inputs of type %s" % type(inputs).__name__)
    if loss_fn is not None and not callable(loss_fn):
        raise bad("a loss_fn of type %s" % type(loss_fn).__name__)
    return model, tuple(inputs), loss_fn


# -- running and capturing ------------------------------------------------------------------------
def flatten(out, prefix="output"):
    import torch
    if isinstance(out, torch.Tensor):
        return [(prefix, out)]
    if isinstance(out, dict):
        items = list(out.items())
    elif isinstance(out, (tuple, list)):
        items = list(enumerate(out))
    else:
        return []
    return [x for k, v in items for x in flatten(v, "%s[%s]" % (prefix, k))]


def default_loss(out):
    terms = [t.float().square().mean() for _, t in flatten(out) if t.is_floating_point()]
    if not terms:
        raise Usage("the model's output holds no floating-point tensor to take a loss of",
                    "return a loss_fn as the third value of the MODEL callable")
    return sum(terms)


def autocast_ctx(torch, device, opts):
    import contextlib
    if not opts.get("autocast"):
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def forward_backward(torch, model, inputs, loss_fn, ctx_fn):
    model.zero_grad(set_to_none=True)
    with ctx_fn():
        out = model(*inputs)
        loss = (loss_fn or default_loss)(out)
    loss.backward()
    return out, loss


def host(t):
    return t.detach().to("cpu").float()


def capture(model, out, loss):
    got = {name: host(t) for name, t in flatten(out)}
    got["loss"] = host(loss)
    for name, p in model.named_parameters():
        if p.requires_grad:
            got["grad." + name] = host(p.grad) if p.grad is not None else None
    return got


def train(torch, model, inputs, loss_fn, ctx_fn, opts):
    opt = torch.optim.SGD(model.parameters(), lr=opts.get("lr", 0.01))
    for _ in range(opts.get("steps", 0)):
        forward_backward(torch, model, inputs, loss_fn, ctx_fn)
        opt.step()
    return {"param." + n: host(p) for n, p in model.named_parameters()}


# -- comparing ------------------------------------------------------------------------------------
def compare_one(torch, got, want, rtol, atol):
    """Error figures of one tensor; NaN/Inf where the reference is finite count as mismatches
    (and apart, in `nonfinite`), so every figure stays a finite number."""
    if got is None:
        return {"ok": False, "missing": True, "excess": 1e30}
    if tuple(got.shape) != tuple(want.shape):
        return {"ok": False, "shape": [list(got.shape), list(want.shape)], "excess": 1e30}
    scale = float(want.abs().max()) if want.numel() else 0.0
    finite_want = torch.isfinite(want)
    nonfinite_got = ~torch.isfinite(got) & finite_want
    both = finite_want & ~nonfinite_got
    diff = (got - want).abs()
    allow = atol * max(scale, 1e-30) + rtol * want.abs()
    bad = ((diff > allow) & both) | nonfinite_got
    d, a, w = diff[both], allow[both], want.abs()[both]
    nonfinite = int(nonfinite_got.sum())
    excess = 1e30 if nonfinite else (float((d / a.clamp_min(1e-38)).max()) if d.numel() else 0.0)
    return {"ok": int(bad.sum()) == 0, "max_abs_error": float(d.max()) if d.numel() else 0.0,
            # relative to |r|, but not below 0.1% of the largest |r|: no blow-up near zero
            "max_rel_error": float((d / w.clamp_min(max(1e-3 * scale, 1e-12))).max())
            if d.numel() else 0.0,
            "mismatched": int(bad.sum()), "elements": got.numel(), "nonfinite": nonfinite,
            "excess": min(excess, 1e30), "reference_nonfinite": int((~finite_want).sum())}


def compare_all(torch, got, want, rtol, atol):
    rows = []
    for name, w in want.items():
        if w is None:
            continue
        c = compare_one(torch, got.get(name), w, rtol, atol)
        rows.append(dict(c, tensor=name))
    bad = [r for r in rows if not r["ok"]]
    worst = max(rows, key=lambda r: r["excess"]) if rows else None
    return {"ok": not bad, "tensors": len(rows), "mismatched_tensors": len(bad),
            "max_abs_error": max((r.get("max_abs_error", 0.0) for r in rows), default=0.0),
            "max_rel_error": max((r.get("max_rel_error", 0.0) for r in rows), default=0.0),
            "nonfinite": sum(r.get("nonfinite", 0) for r in rows),
            "worst": worst["tensor"] if worst else None,
            "worst_detail": {k: v for k, v in (worst or {}).items() if k != "excess"},
            "mismatches": [{k: v for k, v in r.items() if k != "excess"} for r in bad][:20]}


def verdict(cmp, rtol, atol):
    if cmp["ok"]:
        return ("%d tensors match (max abs err %.3g, max rel err %.3g)"
                % (cmp["tensors"], cmp["max_abs_error"], cmp["max_rel_error"]))
    w = cmp["worst_detail"]
    why = ("missing" if w.get("missing") else "shape %s vs %s" % tuple(w["shape"])
           if w.get("shape") else "%d of %d elements outside rtol=%g atol=%g, max abs err %.3g%s"
           % (w["mismatched"], w["elements"], rtol, atol, w["max_abs_error"],
              ", %d NaN/Inf" % w["nonfinite"] if w.get("nonfinite") else ""))
    return "MISMATCH: %d of %d tensors differ; worst %s (%s)" % (
        cmp["mismatched_tensors"], cmp["tensors"], cmp["worst"], why)


# -- the device -----------------------------------------------------------------------------------


def device_module(torch, device):
    return None if device.type == "cpu" else getattr(torch, device.type, None)


def open_device(torch, name):
    try:
        device = torch.device(name)
    except RuntimeError as e:
        return None, "no %r device in this torch: %s" % (name, e)
    if device.type == "cpu":
        return device, None
    mod = device_module(torch, device)
    available = bool(mod and mod.is_available())
    count = mod.device_count() if mod and available else 0
    if not available or count == 0:
        return None, "%s device not available (count %d)" % (name, count)
    return device, None


def identity(torch, name):
    emu = sys.modules.get("neuron_emulator")
    emulated = bool(emu is not None and getattr(emu, "is_loaded", lambda: False)()) \
        and name == "neuron"
    info = {"torch": torch.__version__, "emulated": emulated}
    if emulated:
        info["emulator"] = getattr(emu, "__version__", "?")
    elif name == "neuron":
        try:
            from importlib import metadata
            info["torch_neuronx"] = metadata.version("torch-neuronx")
        except Exception:
            info["torch_neuronx"] = None
    if name == "cuda" and torch.cuda.is_available():
        info["device_name"] = torch.cuda.get_device_name(0)
    return info


def tracking_api(torch, device):
    """(api, counts_fn): the op-tracking API of the device's backend, or (None, None)."""
    if device.type in ("cpu", "cuda"):
        return None, None
    api = None
    try:
        import torch_neuronx
        if hasattr(torch_neuronx, "get_fallback_ops"):
            api = torch_neuronx
    except Exception:
        pass
    emu = sys.modules.get("neuron_emulator")
    if api is None:
        api = emu if emu is not None and hasattr(emu, "get_fallback_ops") else \
            getattr(torch, "neuron", None)
        api = api if hasattr(api, "get_fallback_ops") else None

    def counts():
        for src in (emu, api):
            got = getattr(src, "get_executed_ops", lambda: None)() if src is not None else None
            if isinstance(got, dict):
                return got
        return None
    return api, counts


def clear_tracking(api):
    if api is None:
        return
    for name in ("clear_op_tracking", "clear_fallback_ops"):
        if hasattr(api, name):
            getattr(api, name)()
            return


def memory_api(torch, device):
    mod = device_module(torch, device)
    if mod is None or not hasattr(mod, "max_memory_allocated"):
        return None
    return mod


def reset_peak(mem):
    if mem is not None and hasattr(mem, "reset_peak_memory_stats"):
        mem.reset_peak_memory_stats()


def timed(torch, device, fn, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        sync(torch, device)
        times.append(time.perf_counter() - t0)
    return times


def stats(first, times):
    return {"first_call_s": first, "iterations": len(times),
            "median_s": statistics.median(times) if times else None,
            "min_s": min(times) if times else None, "max_s": max(times) if times else None,
            "stdev_s": statistics.pstdev(times) if len(times) > 1 else 0.0}


# -- the trial, step by step ----------------------------------------------------------------------
class Trial:
    def __init__(self, torch, opts, device, model, inputs, loss_fn):
        self.torch, self.opts, self.device = torch, opts, device
        self.initial, self.inputs, self.loss_fn = model, inputs, loss_fn
        self.dtype_name = opts.get("dtype", "float32")
        rtol, atol = TOL["bfloat16" if opts.get("autocast") else self.dtype_name]
        self.rtol = opts["rtol"] if opts.get("rtol") is not None else rtol
        self.atol = opts["atol"] if opts.get("atol") is not None else atol
        self.ref, self.ref_params, self.dev_got, self.timing = {}, {}, {}, {}
        self.mem = memory_api(torch, device)
        self.api, self.counts = tracking_api(torch, device)

    def ctx(self):
        return autocast_ctx(self.torch, self.device, self.opts)

    def to_device(self, model):
        """A copy of the initial model on the device, in the run's dtype (float64 as float32)."""
        torch = self.torch
        m = copy.deepcopy(model)
        dtype = getattr(torch, self.dtype_name)
        if self.dtype_name != "float32" or self.device.type == "neuron":
            m = m.to(dtype)  # on the CPU first: one transfer, in the device's dtype
        return m.to(self.device)

    def device_inputs(self, inputs=None):
        dtype = getattr(self.torch, self.dtype_name)
        out = []
        for t in (inputs if inputs is not None else self.inputs):
            if t.is_floating_point() and (t.dtype != dtype and (
                    self.dtype_name != "float32" or self.device.type == "neuron")):
                t = t.to(dtype)
            out.append(t.to(self.device))
        return tuple(out)


def float64_report(t):
    torch = t.torch
    params = [n for n, p in t.initial.named_parameters() if p.dtype == torch.float64]
    bufs = [n for n, b in t.initial.named_buffers() if b.dtype == torch.float64]
    ins = [i for i, x in enumerate(t.inputs) if x.dtype == torch.float64]
    what = dict(float64_parameters=params, float64_buffers=bufs, float64_inputs=ins,
                dtype=t.dtype_name, autocast=bool(t.opts.get("autocast")),
                rtol=t.rtol, atol=t.atol)
    mode = "%s%s" % (t.dtype_name, " + autocast(bfloat16)" if what["autocast"] else "")
    if params or bufs or ins:
        add("dtype", "warn", "float64 in the model (%d parameters, %d buffers, %d inputs): the "
            "neuron device runs float64 as float32; trial runs %s against a float32 CPU "
            "reference" % (len(params), len(bufs), len(ins), mode), **what)
    else:
        add("dtype", "pass", "%s on %s against a float32 CPU reference (rtol=%g, atol=%g)"
            % (mode, t.device.type, t.rtol, t.atol), **what)


def reference(t):
    step("reference")
    torch = t.torch
    ref = copy.deepcopy(t.initial).float()
    inputs = tuple(x.float() if x.is_floating_point() else x for x in t.inputs)
    t0 = time.perf_counter()
    try:
        out, loss = forward_backward(torch, ref, inputs, t.loss_fn, lambda: _null())
        t.ref = capture(ref, out, loss)
        if t.opts.get("steps"):
            t.ref_params = train(torch, ref, inputs, t.loss_fn, lambda: _null(), t.opts)
    except Usage:
        raise
    except Exception as e:
        add("reference", "fail", "the model fails on the CPU in float32: %s" % short(e),
            error=traceback.format_exc(limit=6)[-3000:])
        return False
    n_params = sum(p.numel() for p in ref.parameters())
    bad = [k for k, v in t.ref.items() if v is not None and not bool(torch.isfinite(v).all())]
    data = dict(seconds=time.perf_counter() - t0, parameters=n_params, loss=float(t.ref["loss"]),
                outputs={k: list(v.shape) for k, v in t.ref.items() if k.startswith("output")},
                inputs=[list(x.shape) for x in t.inputs], nonfinite_tensors=bad)
    status = "warn" if bad else "pass"
    add("reference", status, "CPU float32 reference: %d parameters, loss %.6g%s" % (
        n_params, data["loss"], "; NaN/Inf in %s" % ", ".join(bad[:5]) if bad else ""), **data)
    return True


def _null():
    import contextlib
    return contextlib.nullcontext()


def eager(t):
    step("eager")
    torch, device = t.torch, t.device
    clear_tracking(t.api)
    reset_peak(t.mem)
    try:
        model, inputs = t.to_device(t.initial), t.device_inputs()
        t0 = time.perf_counter()
        out, loss = forward_backward(torch, model, inputs, t.loss_fn, t.ctx)
        sync(torch, device)
        first = time.perf_counter() - t0
        t.dev_got = capture(model, out, loss)
        t.fallback = read_tracking(t)
        params = train(torch, model, inputs, t.loss_fn, t.ctx, t.opts) \
            if t.opts.get("steps") else {}
        t.dev_params = params
        times = timed(torch, device, lambda: forward_backward(
            torch, model, inputs, t.loss_fn, t.ctx), t.opts.get("iterations", 10))
    except Usage:
        raise
    except Exception as e:
        t.fallback = read_tracking(t)
        hint = ("a tensor the model or loss_fn closes over stays on the CPU: move it with "
                "`.to(out.device)` (or register it as a buffer)") if "same device" in str(e) \
            else None
        add("eager", "fail", "forward/backward on %s failed: %s" % (device, short(e)),
            error=traceback.format_exc(limit=6)[-3000:], hint=hint)
        return False
    t.timing["eager"] = stats(first, times)
    t.peak = {"eager": peak_bytes(t)}
    cmp = compare_all(torch, t.dev_got, t.ref, t.rtol, t.atol)
    add("eager", "pass" if cmp["ok"] else "fail", "forward+backward on %s vs CPU: %s; first "
        "call %.4fs, steady median %.4fs" % (device, verdict(cmp, t.rtol, t.atol), first,
                                            t.timing["eager"]["median_s"] or first),
        rtol=t.rtol, atol=t.atol, timing=t.timing["eager"], **cmp)
    if t.opts.get("steps"):
        drift = compare_all(torch, params, t.ref_params, t.rtol, t.atol)
        add("steps", "pass" if drift["ok"] else "fail", "parameters after %d SGD steps (lr %g): "
            "%s" % (t.opts["steps"], t.opts.get("lr", 0.01), verdict(drift, t.rtol, t.atol)),
            steps=t.opts["steps"], **drift)
    return True


def peak_bytes(t):
    try:
        return int(t.mem.max_memory_allocated()) if t.mem is not None else None
    except Exception:
        return None


def read_tracking(t):
    if t.api is None:
        return None
    ops = list(t.api.get_fallback_ops())
    executed = getattr(t.api, "get_executed_ops", lambda: None)()
    counts = t.counts()
    return {"ops": ops, "executed": sorted(executed) if executed is not None else None,
            "counts": {o: counts.get(o) for o in ops} if counts is not None else None,
            "executed_counts": counts}


def fallback(t):
    step("fallback")
    fb = getattr(t, "fallback", None)
    if fb is None:
        why = ("no op tracking on %s (only the neuron backend falls back to the CPU)"
               % t.device.type if t.device.type in ("cpu", "cuda") else
               "this backend has no op-tracking API (torch_neuronx.get_fallback_ops)")
        add("fallback", "skip", why)
        return
    ops, counts = fb["ops"], fb["counts"] or {}
    listed = ", ".join("%s%s" % (o, " x%d" % counts[o] if counts.get(o) else "") for o in ops)
    status = "pass" if not ops else ("fail" if t.opts.get("no_fallback") else "warn")
    summary = ("%d op(s) fell back to the CPU in eager mode: %s" % (len(ops), listed)) if ops \
        else "no op fell back to the CPU (%d distinct ops ran on the device)" % len(
            fb["executed"] or [])
    add("fallback", status, summary, ops=ops, counts=fb["counts"], executed=fb["executed"],
        executed_counts=fb["executed_counts"])


# -- torch.compile --------------------------------------------------------------------------------
def compile_backend(t):
    chosen = t.opts.get("compile_backend")
    if chosen:
        return chosen
    return {"cuda": "inductor", "cpu": "aot_eager"}.get(t.device.type, "neuron")


def dynamo_metrics(t):
    """Compilation counters: the backend's get_dynamo_metrics(), else torch._dynamo's."""
    mod = device_module(t.torch, t.device)
    fn = getattr(mod, "get_dynamo_metrics", None) if mod is not None else None
    if fn is not None:
        m = dict(fn())
        return {"compilations": int(m.get("compilations", 0)),
                "recompilations": int(m.get("recompilations", 0)),
                "cache_hits": m.get("cache_hits"), "source": "torch.%s.get_dynamo_metrics"
                % t.device.type}
    from torch._dynamo.utils import counters
    return {"compilations": int(counters["stats"].get("unique_graphs", 0)),
            "recompilations": None, "cache_hits": None,
            "source": "torch._dynamo counters (unique_graphs)"}


def reset_compile(t, n_shapes):
    import torch._dynamo
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters.clear()
    mod = device_module(t.torch, t.device)
    if mod is not None and hasattr(mod, "reset_dynamo_metrics"):
        mod.reset_dynamo_metrics()
    cfg = torch._dynamo.config
    for knob in ("recompile_limit", "cache_size_limit"):  # a shape sweep must not hit it
        if hasattr(cfg, knob):
            setattr(cfg, knob, max(getattr(cfg, knob), n_shapes + 4))


def graph_breaks():
    from torch._dynamo.utils import counters
    return {str(k)[:300]: v for k, v in counters.get("graph_break", {}).items()}


def compile_failure(t, backend, e):
    msg = str(e)
    ops = sorted(set(re.findall(r"aten::\w+", msg)))
    breaks = graph_breaks()
    what = ("unsupported op %s" % ops[0]) if ops else (
        "graph break: %s" % next(iter(breaks)).splitlines()[0] if breaks else short(e))
    add("compile", "fail", "torch.compile(backend=%r, dynamic=False) failed: %s" % (backend, what),
        backend=backend, ops=ops, graph_breaks=breaks, error=short(e),
        traceback=traceback.format_exc(limit=4)[-3000:])


def compile_step(t):
    step("compile")
    torch, device = t.torch, t.device
    backend = compile_backend(t)
    if backend == "neuron":
        import torch._dynamo
        if "neuron" not in torch._dynamo.list_backends(exclude_tags=()):
            add("compile", "skip", "this backend registers no torch.compile backend 'neuron' "
                "(torch-neuronx, or an emulator with its compile backend, is needed)",
                backend=backend)
            return None
    reset_compile(t, len(t.opts.get("shapes") or []))
    clear_tracking(t.api)
    reset_peak(t.mem)
    try:
        model = t.to_device(t.initial)
        compiled = torch.compile(model, backend=backend, dynamic=False)
        inputs = t.device_inputs()
        t0 = time.perf_counter()
        out, loss = forward_backward(torch, compiled, inputs, t.loss_fn, t.ctx)
        sync(torch, device)
        first = time.perf_counter() - t0
        got = capture(model, out, loss)
        metrics = dynamo_metrics(t)
        times = timed(torch, device, lambda: forward_backward(
            torch, compiled, inputs, t.loss_fn, t.ctx), t.opts.get("iterations", 10))
    except Usage:
        raise
    except Exception as e:
        compile_failure(t, backend, e)
        return None
    t.timing["compiled"] = stats(first, times)
    t.peak["compiled"] = peak_bytes(t)
    report_compiled(t, backend, got, metrics)
    return compiled


def report_compiled(t, backend, got, metrics):
    cmp = compare_all(t.torch, got, t.ref, t.rtol, t.atol)
    breaks = graph_breaks()
    fb = read_tracking(t)
    c, e = t.timing["compiled"], t.timing.get("eager") or {}
    speed = (e["median_s"] / c["median_s"]) if e.get("median_s") and c["median_s"] else None
    fell = (fb or {}).get("ops") or []
    status = "fail" if not cmp["ok"] or (fell and t.opts.get("no_fallback")) else (
        "warn" if breaks or fell else "pass")
    summary = ("torch.compile(backend=%r, dynamic=False): %s; compile (first call) %.3fs, "
               "steady median %.4fs%s%s" % (
                   backend, verdict(cmp, t.rtol, t.atol), c["first_call_s"], c["median_s"] or 0,
                   " (%.2fx eager)" % speed if speed else "",
                   "; %d graph break(s): %s" % (sum(breaks.values()),
                                                next(iter(breaks)).splitlines()[0])
                   if breaks else ""))
    if fell:
        summary += "; %d op(s) ran on the CPU inside the compiled graph: %s" % (
            len(fell), ", ".join(fell))
    add("compile", status, summary, backend=backend, timing=c, eager_timing=e or None,
        speedup=speed, graph_breaks=breaks, compilations=metrics["compilations"],
        metrics=metrics, fallback_ops=fb["ops"] if fb else None, rtol=t.rtol, atol=t.atol,
        **cmp)


# -- shapes ---------------------------------------------------------------------------------------
def reshaped(torch, inputs, shape, gen):
    first = inputs[0]
    if len(shape) != first.dim():
        raise Usage("--shapes %s: the first example input has %d dimensions %s, the shape has %d"
                    % ("x".join(map(str, shape)), first.dim(), list(first.shape), len(shape)))
    out = []
    for i, x in enumerate(inputs):
        if i == 0:
            new = list(shape)
        elif x.dim() and x.shape[0] == first.shape[0]:
            new = [shape[0], *x.shape[1:]]
        else:
            out.append(x)
            continue
        if x.is_floating_point():
            out.append(torch.randn(new, generator=gen, dtype=x.dtype))
        elif x.dtype == torch.bool:
            out.append(torch.rand(new, generator=gen) > 0.5)
        else:
            hi = int(x.max()) + 1 if x.numel() else 2
            out.append(torch.randint(int(x.min()) if x.numel() else 0, max(hi, 1), new,
                                     generator=gen, dtype=x.dtype))
    return tuple(out)


def shape_list(t):
    if t.opts.get("shapes"):
        return [list(s) for s in t.opts["shapes"]]
    first = list(t.inputs[0].shape)
    return [[b, *first[1:]] for b in t.opts.get("batch_sizes") or []]


def one_shape(t, compiled, shape, gen):
    # the default loss: a loss_fn closes over targets of the example's shape
    torch, device = t.torch, t.device
    before = dynamo_metrics(t)["compilations"]
    inputs = t.device_inputs(reshaped(torch, t.inputs, shape, gen))
    row = {"shape": shape}
    try:
        t0 = time.perf_counter()
        forward_backward(torch, compiled, inputs, None, t.ctx)
        sync(torch, device)
        row["first_call_s"] = time.perf_counter() - t0
        row["compilations"] = dynamo_metrics(t)["compilations"] - before
        again = timed(torch, device, lambda: forward_backward(
            torch, compiled, inputs, None, t.ctx), 3)
        row["steady_s"] = statistics.median(again)
        row["compile_s"] = max(row["first_call_s"] - row["steady_s"], 0.0)
    except Usage:
        raise
    except Exception as e:
        row["error"] = short(e)
    return row


def shapes_step(t, compiled):
    step("shapes")
    shapes = shape_list(t)
    if compiled is None:
        add("shapes", "skip", "the shape sweep needs a compiled model, and torch.compile did not "
            "succeed (see trial.compile)", shapes=shapes)
        return
    gen = t.torch.Generator().manual_seed(t.opts.get("seed", 0) + 1)
    rows = [one_shape(t, compiled, s, gen) for s in shapes]
    m = dynamo_metrics(t)
    add("shapes", "fail" if any("error" in r for r in rows) else "pass",
        "%d shapes: %d compilation(s)" % (len(rows), sum(r.get("compilations", 0) for r in rows)),
        rows=rows, base_shape=list(t.inputs[0].shape), metrics=m,
        compile_first_call_s=t.timing["compiled"]["first_call_s"])


# -- baselines ------------------------------------------------------------------------------------
def baseline_meta(t, ident):
    return {"format": BASELINE_FORMAT, "model": t.opts.get("model_id") or t.opts["model"],
            "torch": ident["torch"],
            "device": t.device.type, "device_name": ident.get("device_name"),
            "emulated": ident["emulated"], "dtype": t.dtype_name,
            "autocast": bool(t.opts.get("autocast")), "seed": t.opts.get("seed", 0),
            "steps": t.opts.get("steps", 0), "lr": t.opts.get("lr", 0.01),
            "inputs": [list(x.shape) for x in t.inputs],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def save_baseline(t, ident, path):
    step("baseline")
    tensors = {k: v.contiguous() for k, v in dict(t.dev_got, **getattr(t, "dev_params", {}))
               .items() if v is not None}
    meta = baseline_meta(t, ident)
    tmp = made = None
    try:
        # a random name created exclusively, never through a link (as util/atomic.temp_file;
        # this script runs in the target without neuron-env on its path)
        tmp = "%s.%s.tmp" % (path, os.urandom(8).hex())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        made = tmp
        with os.fdopen(fd, "wb") as f:
            t.torch.save({"meta": json.dumps(meta), "tensors": tensors}, f)
            os.fchmod(f.fileno(), 0o644)
        os.replace(tmp, path)
    except OSError as e:
        if made is not None and os.path.lexists(made):
            os.unlink(made)
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


def size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024.0


def memory(t):
    peaks = getattr(t, "peak", {}) or {}
    if t.mem is None or not any(v is not None for v in peaks.values()):
        add("memory", "skip", "peak device memory: not reported by the %s backend"
            % t.device.type)
        return
    parts = ", ".join("%s %s" % (k, size(v)) for k, v in peaks.items() if v is not None)
    add("memory", "pass", "peak device memory: %s" % parts, peak_bytes=peaks)


# -- main -----------------------------------------------------------------------------------------
def run_trial(torch, opts, doc):
    step("device")
    device, why = open_device(torch, opts["device"])
    ident = identity(torch, opts["device"])
    doc.update(backend=ident, emulated=ident["emulated"])
    if device is None:
        add("device", "fail", why, causes=[
            "the Neuron driver is not loaded or no devices are visible (neuron-ls)",
            "device autoload is disabled (TORCH_DEVICE_BACKEND_AUTOLOAD=0)",
            "torch-neuronx is missing or the public index's placeholder (neuron-env doctor)"])
        return
    step("model")
    model, inputs, loss_fn = load_model(torch, opts["model"], opts.get("seed", 0))
    t = Trial(torch, opts, device, model, inputs, loss_fn)
    float64_report(t)
    if opts.get("baseline") and not os.path.isfile(opts["baseline"]):
        raise Usage("--baseline %s: no such file" % opts["baseline"])
    if not reference(t) or not eager(t):
        fallback(t)
        return
    fallback(t)
    compiled = compile_step(t) if opts.get("compile") or shape_list(t) else None
    if shape_list(t):
        shapes_step(t, compiled)
    if opts.get("save_baseline"):
        save_baseline(t, ident, opts["save_baseline"])
    if opts.get("baseline"):
        compare_baseline(t, ident, opts["baseline"])
    memory(t)
    doc["timing"] = t.timing


def main():
    opts = json.loads(sys.argv[1])
    doc = {"options": opts}
    step("import")
    t0 = time.perf_counter()
    try:
        import torch
    except Exception as e:
        add("import", "fail", "import torch failed: %s" % short(e))
        return finish(doc)
    doc["import_s"] = time.perf_counter() - t0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run_trial(torch, opts, doc)
        except Usage as u:
            doc["usage_error"] = {"message": u.message, "hint": u.hint}
    seen = {}
    for w in caught:
        key = "%s: %s" % (w.category.__name__, str(w.message).splitlines()[0][:200])
        seen[key] = seen.get(key, 0) + 1
    doc["warnings"] = [{"warning": k, "count": v} for k, v in seen.items()][:50]
    finish(doc)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        add("internal", "error", "the trial script crashed", traceback=traceback.format_exc())
        finish({})
