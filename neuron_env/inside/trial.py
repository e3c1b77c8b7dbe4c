# Runs inside the TARGET interpreter: stdlib + torch only (Python 3.10+). argv[1] is a JSON
# object of options (see neuron_env/trial/options.py). Prints one JSON document between markers
# on stdout; "@@STEP name@@" lines on stderr say which step runs, so a runner that kills us at
# its timeout can name the step that hung.
#
# The MODEL protocol: a callable taking no arguments that returns (model, example_inputs) or
# (model, example_inputs, loss_fn); model is a torch.nn.Module, example_inputs a tuple of
# positional input tensors or a dict of keyword inputs (model(**inputs)); loss_fn(output) ->
# scalar tensor (default: mean of squares of every floating output); it runs on the output's
# device, so a target it closes over must be moved there (`y.to(out.device)`). The callable
# runs after torch.manual_seed(seed), on the CPU.
#
# The script is split along its steps into the _trial_*.py files beside it (this folder goes
# first on sys.path, so they load in the target without neuron-env installed):
#   _trial_common   results, the bad-input exception, tracebacks (innermost + user frames)
#   _trial_models   built-in workloads, importing the MODEL, its protocol
#   _trial_compare  flattening outputs, the allclose and reduced-precision rules, verdicts
#   _trial_device   opening the device, op tracking, memory, timing
#   _trial_compile  torch.compile and the shape sweep
#   _trial_baseline saving and comparing baselines
#   _trial_inspect  where results differ: the first diverging module, fallback source lines,
#                   and the decode (--generate) check
#   trial (here)    the Trial, its steps in order, main
import contextlib
import copy
import json
import os
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _shared.py, even under -P
from _shared import emit, step, sync
from _trial_baseline import compare_baseline, save_baseline
from _trial_common import RESULTS, Usage, add, short, tb_text, user_frames, where
from _trial_compare import LOW_FACTOR, TOL, compare_all, flatten, host, verdict
from _trial_compile import compile_step, shape_list, shapes_step
from _trial_device import (
    all_phases,
    identity,
    memory,
    memory_api,
    open_device,
    peak_bytes,
    reset_peak,
    stats,
    timed,
    tracked,
    tracking_api,
)
from _trial_inspect import fallback_sources, first_divergence, generate_step, random_modules
from _trial_models import load_model, loss_arity


def finish(doc):
    emit(dict(doc, results=RESULTS), default=str)


# -- running and capturing ------------------------------------------------------------------------
def own_loss(out):
    """The model's own loss (a Hugging Face model called with `labels` returns out.loss): a
    floating-point scalar under the key or attribute `loss`, else None."""
    import torch
    loss = out.get("loss") if isinstance(out, dict) else getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor) and loss.is_floating_point() and loss.numel() == 1:
        return loss.reshape(())
    return None


def default_loss(out):
    """The model's own loss when it returns one, else the mean of squares of every floating
    output."""
    own = own_loss(out)
    if own is not None:
        return own
    terms = [t.float().square().mean() for _, t in flatten(out) if t.is_floating_point()]
    if not terms:
        raise Usage("the model's output holds no floating-point tensor to take a loss of",
                    "return a loss_fn as the third value of the MODEL callable")
    return sum(terms)


class Trial:
    def __init__(self, torch, opts, device, model, inputs, loss_fn):
        self.torch, self.opts, self.device = torch, opts, device
        self.initial, self.inputs, self.loss_fn = model, inputs, loss_fn
        self.loss_args = loss_arity(loss_fn) if loss_fn is not None else 1
        self.dtype_name = opts.get("dtype", "float32")
        self.inference = bool(opts.get("inference"))
        self.low_precision = self.dtype_name != "float32" or bool(opts.get("autocast"))
        rtol, atol = TOL["bfloat16" if opts.get("autocast") else self.dtype_name]
        self.user_tol = opts.get("rtol") is not None or opts.get("atol") is not None
        self.rtol = opts["rtol"] if opts.get("rtol") is not None else rtol
        self.atol = opts["atol"] if opts.get("atol") is not None else atol
        self.ref, self.ref_params, self.dev_got, self.timing = {}, {}, {}, {}
        self.low, self.low_params, self.skipped = None, None, []
        self.mode, self.stochastic = "train" if model.training else "eval", []
        self.mem = memory_api(torch, device)
        self.api, self.counts = tracking_api(torch, device)
        self.phases, self.reference_ok = {}, False  # phase -> op tracking (_trial_device)

    def tolerance(self):
        """{rtol, atol, rule_applied}: the rule the comparison applies, in words (#48.6). At a
        reduced dtype rtol/atol are only the floor, and only where the user gave them."""
        if not self.low_precision:
            return dict(rtol=self.rtol, atol=self.atol, rule_applied=(
                "|device - cpu_float32| <= atol + rtol*|cpu_float32| element-wise (rtol=%g, "
                "atol=%g)" % (self.rtol, self.atol)))
        floor = ("atol + rtol*max|cpu_float32| (your --rtol %g --atol %g)" % (
            self.rtol, self.atol) if self.user_tol else
            "2^-8*max|cpu_float32| + 1e-6 (one bfloat16 step at the tensor's scale)")
        low = "cpu_autocast" if self.opts.get("autocast") else "cpu_" + self.dtype_name
        return dict(rtol=self.rtol if self.user_tol else None,
                    atol=self.atol if self.user_tol else None, rule_applied=(
                        "per tensor: max|device - cpu_float32| <= %g * max(max|%s - "
                        "cpu_float32|, that CPU's typical relative error (90th percentile over "
                        "the model's tensors) * max|cpu_float32|) + %s" % (LOW_FACTOR, low,
                                                                          floor)))

    def ctx(self, device=None):
        if not self.opts.get("autocast"):
            return contextlib.nullcontext()
        return self.torch.autocast(device_type=(device or self.device).type,
                                   dtype=self.torch.bfloat16)

    def run(self, model, inputs, ctx=None, use_default_loss=False):
        """Forward (+ loss + backward unless --inference) of model on inputs."""
        out, loss = self.forward(model, inputs, ctx, use_default_loss)
        if loss is not None:
            loss.backward()
        return out, loss

    def forward(self, model, inputs, ctx=None, use_default_loss=False):
        """Forward (+ loss unless --inference) of model on inputs: (output, loss or None)."""
        args, kwargs = inputs
        model.zero_grad(set_to_none=True)
        fn = None if use_default_loss else self.loss_fn
        with (ctx or self.ctx)():
            if self.inference:
                with self.torch.no_grad():
                    return model(*args, **kwargs), None
            out = model(*args, **kwargs)
            if fn is None:
                loss = default_loss(out)
            elif self.loss_args == 2:  # loss_fn(output, batch_slice): the whole batch here
                loss = fn(out, slice(0, self.batch_size()))
            else:
                loss = fn(out)
        return out, loss

    def capture(self, model, out, loss):
        skipped = []
        got = {name: host(t) for name, t in flatten(out, skipped=skipped)}
        self.skipped = skipped
        if loss is not None:
            got["loss"] = host(loss)
            for name, p in model.named_parameters():
                if p.requires_grad:
                    got["grad." + name] = host(p.grad) if p.grad is not None else None
        return got

    def train(self, model, inputs, ctx=None):
        opt = self.torch.optim.SGD(model.parameters(), lr=self.opts.get("lr", 0.01))
        for _ in range(self.opts.get("steps", 0)):
            self.run(model, inputs, ctx=ctx)
            opt.step()
        return {"param." + n: host(p) for n, p in model.named_parameters()}

    def compare(self, got, want, low):
        return compare_all(self.torch, got, want, self.rtol, self.atol,
                           low=low if self.low_precision else None, user_tol=self.user_tol)

    def prepared(self, model):
        m = copy.deepcopy(model)
        return m.eval() if self.mode == "eval" else m

    def to_device(self, model, device=None):
        """A copy of the initial model on the device, in the run's dtype (float64 as float32)."""
        device = device or self.device
        m = self.prepared(model)
        dtype = getattr(self.torch, self.dtype_name)
        if self.dtype_name != "float32" or device.type == "neuron":
            m = m.to(dtype)  # on the CPU first: one transfer, in the device's dtype
        return m.to(device)

    def device_inputs(self, inputs=None, device=None):
        torch, device = self.torch, device or self.device
        dtype = getattr(torch, self.dtype_name)

        def one(t):
            if not isinstance(t, torch.Tensor):
                return t
            if t.is_floating_point() and (t.dtype != dtype and (
                    self.dtype_name != "float32" or device.type == "neuron")):
                t = t.to(dtype)
            return t.to(device)
        args, kwargs = inputs if inputs is not None else self.inputs
        return tuple(one(x) for x in args), {k: one(v) for k, v in kwargs.items()}

    def float_inputs(self):
        """The inputs for the float32 CPU reference."""
        torch = self.torch
        f = lambda x: x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x  # noqa
        args, kwargs = self.inputs
        return tuple(f(x) for x in args), {k: f(v) for k, v in kwargs.items()}

    def tensors(self):
        args, kwargs = self.inputs
        return [x for x in list(args) + list(kwargs.values())
                if isinstance(x, self.torch.Tensor)]

    def batch_size(self):
        """Dimension 0 of the first input tensor (what a batch_slice indexes)."""
        first = next((x for x in self.tensors() if x.dim()), None)
        return int(first.shape[0]) if first is not None else 1

    def input_shapes(self):
        return [list(x.shape) for x in self.tensors()]


# -- the trial, step by step ----------------------------------------------------------------------
def choose_mode(t):
    """Train-mode models that draw random numbers (dropout) cannot match a CPU run: the RNG
    streams differ. Both sides then run in eval mode, and the dtype line says so."""
    if t.inference:
        t.mode = "eval"
        return
    if not t.initial.training:
        return
    probe = copy.deepcopy(t.initial).float()
    args = tuple(x.float() if x.is_floating_point() else x for x in t.inputs[0])
    kwargs = {k: v.float() if isinstance(v, t.torch.Tensor) and v.is_floating_point() else v
              for k, v in t.inputs[1].items()}
    try:
        t.stochastic = random_modules(t.torch, probe, (args, kwargs), t.opts.get("seed", 0))
    except Exception:
        return  # the reference step reports the model's failure
    if t.stochastic:
        t.mode = "eval"


def float64_report(t):
    torch = t.torch
    params = [n for n, p in t.initial.named_parameters() if p.dtype == torch.float64]
    bufs = [n for n, b in t.initial.named_buffers() if b.dtype == torch.float64]
    ins = [i for i, x in enumerate(t.tensors()) if x.dtype == torch.float64]
    what = dict(float64_parameters=params, float64_buffers=bufs, float64_inputs=ins,
                dtype=t.dtype_name, autocast=bool(t.opts.get("autocast")),
                mode=t.mode, stochastic=t.stochastic, inference=t.inference,
                rule="low_precision" if t.low_precision else "allclose", **t.tolerance())
    mode = "%s%s" % (t.dtype_name, " + autocast(bfloat16)" if what["autocast"] else "")
    if t.low_precision:
        rule = ("judged against the CPU at the same dtype: the device's max abs error vs a "
                "float32 CPU reference within 2x the CPU-%s error%s" % (
                    "autocast" if what["autocast"] else t.dtype_name,
                    " + atol/rtol" if t.user_tol else "")) + " [%s]" % what["rule_applied"]
    else:
        rule = "against a float32 CPU reference, |a-b| <= atol + rtol*|b| (rtol=%g, atol=%g)" \
            % (t.rtol, t.atol)
    how = ("; --inference: forward only, eval mode" if t.inference else
           "; %s in train mode (%s): both sides compared in EVAL mode (CPU and device RNG "
           "streams differ)" % ("random draws" if t.stochastic[0].startswith("(") else
                                "stochastic modules", ", ".join(t.stochastic[:4]) + (
                                    ", ..." if len(t.stochastic) > 4 else ""))
           if t.stochastic else "")
    if params or bufs or ins:
        add("dtype", "warn", "float64 in the model (%d parameters, %d buffers, %d inputs): the "
            "neuron device runs float64 as float32; trial runs %s %s%s" % (
                len(params), len(bufs), len(ins), mode, rule, how), **what)
    else:
        add("dtype", "pass", "%s on %s %s%s" % (mode, t.device.type, rule, how), **what)


def reference(t):
    step("reference")
    torch = t.torch
    ref = t.prepared(t.initial).float()
    inputs = t.float_inputs()
    t0 = time.perf_counter()
    try:
        out, loss = t.run(ref, inputs, ctx=contextlib.nullcontext)
        t.ref = t.capture(ref, out, loss)
        if t.opts.get("steps"):
            t.ref_params = t.train(ref, inputs, ctx=contextlib.nullcontext)
        if t.low_precision:  # the CPU at the device's dtype: what that dtype costs anyway
            cpu = torch.device("cpu")
            low = t.to_device(t.initial, cpu)
            low_in = t.device_inputs(device=cpu)
            out, loss = t.run(low, low_in, ctx=lambda: t.ctx(cpu))
            t.low = t.capture(low, out, loss)
            if t.opts.get("steps"):
                t.low_params = t.train(low, low_in, ctx=lambda: t.ctx(cpu))
    except Usage:
        raise
    except Exception as e:
        frames = user_frames(traceback.extract_tb(e.__traceback__))
        add("reference", "fail", "the model fails on the CPU in float32: %s%s" % (
            short(e), "; at %s" % where(frames[-1]) if frames else ""),
            error=tb_text(e), crashed=True)
        return False
    t.reference_ok = True
    n_params = sum(p.numel() for p in ref.parameters())
    bad = [k for k, v in t.ref.items() if v is not None and not bool(torch.isfinite(v).all())]
    data = dict(seconds=time.perf_counter() - t0, parameters=n_params,
                loss=float(t.ref["loss"]) if "loss" in t.ref else None,
                outputs={k: list(v.shape) for k, v in t.ref.items() if k.startswith("output")},
                inputs=t.input_shapes(), nonfinite_tensors=bad,
                skipped_outputs=[{"output": n, "type": ty} for n, ty in t.skipped])
    status = "warn" if bad else "pass"
    skipped = "; not compared (not tensors): %s" % ", ".join(
        "%s (%s)" % s for s in t.skipped[:5]) if t.skipped else ""
    add("reference", status, "CPU float32 reference: %d parameters, %s%s%s%s" % (
        n_params, "loss %.6g" % data["loss"] if data["loss"] is not None else
        "%d output tensor(s)" % len(data["outputs"]),
        ", CPU %s run too" % t.dtype_name if t.low_precision and not t.opts.get("autocast")
        else ", CPU autocast run too" if t.low_precision else "",
        "; NaN/Inf in %s" % ", ".join(bad[:5]) if bad else "", skipped), **data)
    return True


def eager(t):
    step("eager")
    torch, device = t.torch, t.device
    reset_peak(t.mem)
    try:
        model, inputs = t.to_device(t.initial), t.device_inputs()
        t0 = time.perf_counter()
        with tracked(t, "forward"):
            out, loss = t.forward(model, inputs)
        if loss is not None:
            with tracked(t, "backward"):
                loss.backward()
        sync(torch, device)
        first = time.perf_counter() - t0
        t.dev_got = t.capture(model, out, loss)
        params = {}
        if t.opts.get("steps"):
            with tracked(t, "steps"):
                params = t.train(model, inputs)
        t.dev_params = params
        times = timed(torch, device, lambda: t.run(model, inputs), t.opts.get("iterations", 10))
    except Usage:
        raise
    except Exception as e:
        hint = ("a tensor the model or loss_fn closes over stays on the CPU: move it with "
                "`.to(out.device)` (or register it as a buffer)") if "same device" in str(e) \
            else None
        frames = user_frames(traceback.extract_tb(e.__traceback__))
        at = "; at %s" % where(frames[-1]) if frames else ""
        add("eager", "fail", "forward%s on %s CRASHED (the CPU reference ran): %s%s" % (
            "" if t.inference else "/backward", device, short(e), at),
            error=tb_text(e), hint=hint, crashed=True)
        return False
    t.timing["eager"] = stats(first, times)
    t.peak = {"eager": peak_bytes(t)}
    cmp = t.compare(t.dev_got, t.ref, t.low)
    div = first_divergence(t) if not cmp["ok"] else None
    add("eager", "pass" if cmp["ok"] else "fail", "%s on %s vs CPU: %s%s; first call %.4fs, "
        "steady median %.4fs" % ("forward" if t.inference else "forward+backward", device,
                                 verdict(cmp, t.rtol, t.atol),
                                 "; %s: %s (%s, %s)" % (
                                     "first module out of tolerance" if div.get("side") in (
                                         None, "both") else "first diverging module",
                                     div["module"], div.get("module_type"), div["why"])
                                 if div and div.get("module") else "",
                                 first, t.timing["eager"]["median_s"] or first),
        timing=t.timing["eager"], first_divergence=div, **t.tolerance(),
        mode=t.mode, **cmp)
    if t.opts.get("steps"):
        drift = t.compare(params, t.ref_params, t.low_params)
        add("steps", "pass" if drift["ok"] else "fail", "parameters after %d SGD steps (lr %g): "
            "%s" % (t.opts["steps"], t.opts.get("lr", 0.01), verdict(drift, t.rtol, t.atol)),
            steps=t.opts["steps"], **drift)
    return True


def fallback(t):
    step("fallback")
    fb = all_phases(t.phases)
    if fb is None:
        why = ("no op tracking on %s (only the neuron backend falls back to the CPU)"
               % t.device.type if t.device.type in ("cpu", "cuda") else
               "not run: the CPU reference failed, so the device run did not start"
               if not t.reference_ok else
               "this backend has no op-tracking API (torch_neuronx.get_fallback_ops)"
               if t.api is None else "no op-tracking data")
        add("fallback", "skip", why)
        return
    ops, counts = fb["ops"], fb["counts"] or {}
    sources = fallback_sources(t, ops) if ops and t.reference_ok else {}
    where_ = {o: [p for p, f in t.phases.items() if o in f["ops"]] for o in ops}
    listed = ", ".join("%s%s [%s]%s" % (o, " x%d" % counts[o] if counts.get(o) else "",
                                        ", ".join(where_[o]),
                                        " (at %s)" % sources[o][0] if sources.get(o) else "")
                       for o in ops)
    status = "pass" if not ops else ("fail" if t.opts.get("no_fallback") else "warn")
    ran = ", ".join(t.phases)
    summary = ("%d op(s) fell back to the CPU: %s (phases tracked: %s)" % (len(ops), listed, ran)
               ) if ops else "no op fell back to the CPU in %s (%d distinct ops ran on the " \
        "device)" % (ran, len(fb["executed"] or []))
    add("fallback", status, summary, ops=ops, counts=fb["counts"], executed=fb["executed"],
        executed_counts=fb["executed_counts"], sources=sources or None,
        phases={p: {"ops": f["ops"], "counts": f["counts"]} for p, f in t.phases.items()})


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
    doc["batch_size"] = t.batch_size()  # what the cost's samples/s counts
    choose_mode(t)
    float64_report(t)
    if opts.get("baseline") and not os.path.isfile(opts["baseline"]):
        raise Usage("--baseline %s: no such file" % opts["baseline"])
    if not reference(t) or not eager(t):
        fallback(t)
        return
    compiled = compile_step(t) if opts.get("compile") or shape_list(t) else None
    if shape_list(t):
        shapes_step(t, compiled)
    if opts.get("generate"):
        generate_step(t)
    fallback(t)  # every phase that ran: forward, backward, steps, compile, shapes, generate
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
