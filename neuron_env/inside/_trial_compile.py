# Part of the trial script (inside/trial.py), run INSIDE the target interpreter: stdlib +
# torch. torch.compile (its failure told by root cause and user frame) and the shape sweep.
import re
import statistics
import time

from _shared import step, sync
from _trial_common import (
    Usage,
    add,
    cause_of,
    is_library,
    short,
    tb_text,
    user_frame,
    user_frames,
    where,
)
from _trial_compare import verdict
from _trial_device import (
    clear_tracking,
    device_module,
    peak_bytes,
    read_tracking,
    record_phase,
    reset_peak,
    stats,
    timed,
    tracked,
)

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def compile_backend(t):
    chosen = t.opts.get("compile_backend")
    if chosen:
        return chosen
    return {"cuda": "inductor", "cpu": "aot_eager"}.get(t.device.type, "neuron")


def dynamo_metrics(t):
    """Compilation counts: the backend's (torch._dynamo's counters["neuron"], beside the
    per-graph records of get_dynamo_metrics(); an older emulator returned a dict), else
    torch._dynamo's own (unique_graphs)."""
    from torch._dynamo.utils import counters
    mod = device_module(t.torch, t.device)
    fn = getattr(mod, "get_dynamo_metrics", None) if mod is not None else None
    if fn is not None:
        got = fn()
        if isinstance(got, dict):
            m = dict(got)
        else:  # one record per compiled graph (forward and backward apart)
            c = counters["neuron"]
            graphs = [r for r in got if "_backward_" not in getattr(r, "graph_name", "")]
            m = {"compilations": c.get("compilations", len(graphs)),
                 "recompilations": c.get("recompilations", 0),
                 "cache_hits": c.get("cache_hits")}
        return {"compilations": int(m.get("compilations", 0)),
                "recompilations": int(m.get("recompilations", 0)),
                "cache_hits": m.get("cache_hits"), "source": "torch.%s.get_dynamo_metrics"
                % t.device.type}
    return {"compilations": int(counters["stats"].get("unique_graphs", 0)),
            "recompilations": None, "cache_hits": None,
            "source": "torch._dynamo counters (unique_graphs)"}


def speed_words(speed):
    """' (2.82x faster than eager)' / ' (1.50x slower than eager)': one reading only."""
    if not speed:
        return ""
    if speed >= 1:
        return " (%.2fx faster than eager)" % speed
    return " (%.2fx slower than eager)" % (1 / speed)


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


def _dynamo_where(e, msg):
    """The user's line dynamo was tracing: the innermost user frame of its real_stack, else of
    the 'from user code:' section of the message, else of the traceback."""
    stack = getattr(e, "real_stack", None)
    frames = user_frames(list(stack)) if stack else []
    if frames:
        return where(frames[-1])
    section = msg.split("from user code:", 1)[1] if "from user code:" in msg else ""
    found = [(f, n, fn, code) for f, n, fn, code in _FRAME.findall(section)
             if not is_library(f)]
    if found:
        f, n, _fn, code = found[-1]
        return "%s:%s `%s`" % (f.rsplit("site-packages/", 1)[-1], n, code.strip())
    return user_frame(e)


def cpu_compile_check(t):
    """Checked, not claimed: does torch.compile(backend="aot_eager") compile and run a float32
    CPU copy of the model (forward, loss and backward as the trial runs them)? A fix line may
    then say whether the failure is the device's or the model's."""
    import contextlib

    import torch._dynamo
    torch = t.torch
    torch._dynamo.reset()
    try:
        compiled = torch.compile(t.prepared(t.initial).float(), backend="aot_eager",
                                 dynamic=False)
        t.run(compiled, t.float_inputs(), ctx=contextlib.nullcontext)
    except Usage:
        raise
    except Exception as e:
        return {"backend": "aot_eager", "device": "cpu", "ok": False, "error": cause_of(e),
                "user_frame": _dynamo_where(e, str(e))}
    finally:
        torch._dynamo.reset()
    return {"backend": "aot_eager", "device": "cpu", "ok": True}


def compile_failure(t, backend, e):
    """Say the root cause (torch wraps it: 'RuntimeError when making fake tensor call'), the
    user's line, and what torch.compile(backend="aot_eager") does with a CPU copy (tried
    here, so that the fix line can say whether any backend fails the same)."""
    msg = str(e)
    cause = cause_of(e)
    ops = sorted(set(re.findall(r"aten::\w+", msg)))
    breaks = graph_breaks()
    at = _dynamo_where(e, msg)
    what = ("unsupported op %s" % ops[0]) if ops else (
        "graph break: %s" % next(iter(breaks)).splitlines()[0] if breaks else cause)
    backend_failed = type(e).__name__ == "BackendCompilerFailed"
    same_run = t.device.type == "cpu" and backend == "aot_eager"
    check = {"backend": "aot_eager", "device": "cpu", "ok": False, "error": cause,
             "user_frame": at, "same_run": True} if same_run else cpu_compile_check(t)
    said = ("" if same_run else "; torch.compile(backend='aot_eager') on a float32 CPU copy: %s"
            % ("compiles and runs" if check["ok"] else "fails too (%s)" % check["error"]))
    add("compile", "fail", "torch.compile(backend=%r, dynamic=False) failed %s: %s%s%s%s" % (
        backend, "in the backend compiler" if backend_failed else
        "while tracing the model (before any backend)", what,
        "" if what == cause else "; root cause %s" % cause, "; at %s" % at if at else "", said),
        backend=backend, ops=ops, graph_breaks=breaks, error=short(e), root_cause=cause,
        user_frame=at, phase="backend" if backend_failed else "tracing",
        aot_eager_helps=backend_failed and backend not in ("aot_eager", "eager"),
        cpu_aot_eager=check, traceback=tb_text(e))


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
        out, loss = t.run(compiled, inputs)
        sync(torch, device)
        first = time.perf_counter() - t0
        got = t.capture(model, out, loss)
        metrics = dynamo_metrics(t)
        times = timed(torch, device, lambda: t.run(compiled, inputs),
                      t.opts.get("iterations", 10))
    except Usage:
        raise
    except Exception as e:
        record_phase(t, "compile", read_tracking(t))
        compile_failure(t, backend, e)
        return None
    t.timing["compiled"] = stats(first, times)
    t.peak["compiled"] = peak_bytes(t)
    report_compiled(t, backend, got, metrics)
    return compiled


def report_compiled(t, backend, got, metrics):
    cmp = t.compare(got, t.ref, t.low)
    breaks = graph_breaks()
    fb = read_tracking(t)
    record_phase(t, "compile", fb)
    c, e = t.timing["compiled"], t.timing.get("eager") or {}
    speed = (e["median_s"] / c["median_s"]) if e.get("median_s") and c["median_s"] else None
    fell = (fb or {}).get("ops") or []
    status = "fail" if not cmp["ok"] or (fell and t.opts.get("no_fallback")) else (
        "warn" if breaks or fell else "pass")
    summary = ("torch.compile(backend=%r, dynamic=False): %s; compile (first call) %.3fs, "
               "steady median %.4fs%s%s" % (
                   backend, verdict(cmp, t.rtol, t.atol), c["first_call_s"], c["median_s"] or 0,
                   speed_words(speed),
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
def first_input(inputs):
    """The input a shape applies to: the first positional tensor, else the first keyword one."""
    args, kwargs = inputs
    import torch
    for x in list(args) + list(kwargs.values()):
        if isinstance(x, torch.Tensor):
            return x
    raise Usage("the example inputs hold no tensor to reshape for --shapes/--batch-sizes")


def reshaped(torch, inputs, shape, gen):
    first = first_input(inputs)
    if len(shape) != first.dim():
        raise Usage("--shapes %s: the first example input has %d dimensions %s, the shape has %d"
                    % ("x".join(map(str, shape)), first.dim(), list(first.shape), len(shape)))

    def one(x):
        if not isinstance(x, torch.Tensor):
            return x
        if x is first:
            new = list(shape)
        elif x.dim() and x.shape[0] == first.shape[0]:
            new = [shape[0], *x.shape[1:]]
            if x.dim() == first.dim() and x.dim() > 1 and list(x.shape) == list(first.shape):
                new = list(shape)  # attention_mask beside input_ids: the same shape
        else:
            return x
        if x.is_floating_point():
            return torch.randn(new, generator=gen, dtype=x.dtype)
        if x.dtype == torch.bool:
            return torch.rand(new, generator=gen) > 0.5
        hi = int(x.max()) + 1 if x.numel() else 2
        lo = int(x.min()) if x.numel() else 0
        return torch.randint(lo, max(hi, lo + 1), new, generator=gen, dtype=x.dtype)
    args, kwargs = inputs
    return tuple(one(x) for x in args), {k: one(v) for k, v in kwargs.items()}


def shape_list(t):
    if t.opts.get("shapes"):
        return [list(s) for s in t.opts["shapes"]]
    first = list(first_input(t.inputs).shape)
    return [[b, *first[1:]] for b in t.opts.get("batch_sizes") or []]


def one_shape(t, model, shape, gen, compiled):
    # the default loss: a loss_fn closes over targets of the example's shape
    torch, device = t.torch, t.device
    before = dynamo_metrics(t)["compilations"] if compiled else 0
    inputs = t.device_inputs(reshaped(torch, t.inputs, shape, gen))
    row = {"shape": shape}
    try:
        t0 = time.perf_counter()
        t.run(model, inputs, use_default_loss=True)
        sync(torch, device)
        row["first_call_s"] = time.perf_counter() - t0
        again = timed(torch, device, lambda: t.run(model, inputs, use_default_loss=True), 3)
        row["steady_s"] = statistics.median(again)
        if compiled:
            row["compilations"] = dynamo_metrics(t)["compilations"] - before
            row["compile_s"] = max(row["first_call_s"] - row["steady_s"], 0.0)
    except Usage:
        raise
    except Exception as e:
        at = _dynamo_where(e, str(e))
        row["error"] = cause_of(e) + ("; at %s" % at if at else "")
    return row


def shapes_step(t, compiled):
    step("shapes")
    shapes = shape_list(t)
    gen = t.torch.Generator().manual_seed(t.opts.get("seed", 0) + 1)
    if compiled is None:  # compile failed: the sweep still tells which shapes run, in eager
        model = t.to_device(t.initial)
        with tracked(t, "shapes"):
            rows = [one_shape(t, model, s, gen, False) for s in shapes]
        failed = [r for r in rows if "error" in r]
        summary = ("%d shapes ran in EAGER mode because torch.compile failed (see "
                   "trial.compile): %s; compilations not measured" % (
                       len(rows), "%d failed (%s: %s)" % (len(failed), "x".join(map(
                           str, failed[0]["shape"])), failed[0]["error"]) if failed
                       else "all ran"))
        add("shapes", "fail" if failed else "warn", summary, rows=rows, mode="eager",
            eager_summary=summary, base_shape=list(first_input(t.inputs).shape))
        return
    with tracked(t, "shapes"):
        rows = [one_shape(t, compiled, s, gen, True) for s in shapes]
    m = dynamo_metrics(t)
    add("shapes", "fail" if any("error" in r for r in rows) else "pass",
        "%d shapes: %d compilation(s)" % (len(rows), sum(r.get("compilations", 0) for r in rows)),
        rows=rows, mode="compiled", base_shape=list(first_input(t.inputs).shape), metrics=m,
        compile_first_call_s=t.timing["compiled"]["first_call_s"])
