# Runs inside the TARGET interpreter: stdlib + torch only. argv[1] is a JSON object of options.
# Prints one JSON document between markers on stdout; "@@STEP name@@" lines on stderr say which
# step is running, so a runner that kills us at a timeout can tell where we hung.
import json
import math
import os
import statistics
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # _shared.py, even under -P
from _shared import emit, step, sync

TOL = {"float32": (1e-4, 1e-4), "bfloat16": (1.6e-2, 1e-2)}  # (rtol, atol) for a matmul
STEPS: list = []  # of step dicts




def add(name, status, summary, **data):
    STEPS.append(dict(name=name, status=status, summary=summary, **data))


def finish(extra):
    emit(dict(steps=STEPS, **extra), default=str)


def host_memory():
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def version_of(dist):
    try:
        from importlib import metadata
        return metadata.version(dist)
    except Exception:
        return None




def compare(torch, got, want, rtol, atol):
    got, want = got.detach().float().cpu(), want.detach().float().cpu()
    diff = (got - want).abs()
    rel = diff / want.abs().clamp_min(1e-12)
    bad = diff > (atol + rtol * want.abs())
    finite = bool(torch.isfinite(got).all())
    return {"max_abs_error": float(diff.max()), "max_rel_error": float(rel.max()),
            "mismatched": int(bad.sum()), "elements": got.numel(), "finite": finite,
            "ok": finite and int(bad.sum()) == 0}


def main():
    opts = json.loads(sys.argv[1])
    extra = {"options": opts}
    step("import")
    t0 = time.perf_counter()
    try:
        import torch
    except Exception as e:
        add("import", "fail", "import torch failed: %s: %s" % (type(e).__name__, e),
            error=traceback.format_exc(limit=3))
        return finish(extra)
    import_s = time.perf_counter() - t0
    extra["torch"] = torch.__version__
    add("import", "pass", "import torch %s took %.2fs" % (torch.__version__, import_s),
        seconds=import_s)
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_device_steps(torch, opts, extra)
    seen = {}
    for w in caught:
        key = "%s: %s" % (w.category.__name__, str(w.message).splitlines()[0][:200])
        seen[key] = seen.get(key, 0) + 1
    extra["warnings"] = [{"warning": k, "count": v} for k, v in seen.items()]
    finish(extra)


def backend_identity(torch, device_type):
    emu = sys.modules.get("neuron_emulator")
    if emu is None and device_type == "neuron":
        try:
            import neuron_emulator as emu  # only if autoload was off: it says whether it loaded
        except Exception:
            emu = None
    info = {"torch_neuronx": version_of("torch-neuronx"), "emulated": False}
    if emu is not None and getattr(emu, "is_loaded", lambda: False)():
        info.update(emulated=True, emulator=getattr(emu, "__version__", "?"))
    if device_type == "cuda" and torch.cuda.is_available():
        info["device_name"] = torch.cuda.get_device_name(0)
    return info, emu


def fallback_api(torch, emu):
    try:
        import torch_neuronx  # the real backend's API
        if hasattr(torch_neuronx, "get_fallback_ops"):
            return torch_neuronx
    except Exception:
        pass
    return emu


DEVICE_CAUSES = ["the Neuron driver is not loaded or no devices are visible",
                 "device autoload is disabled (TORCH_DEVICE_BACKEND_AUTOLOAD=0)",
                 "another PrivateUse1 backend registered first",
                 "torch-neuronx is the public index's placeholder (neuron-env doctor)"]


def open_device(torch, name):
    """The device and its count, or None after recording why there is none."""
    acc = torch.accelerator.current_accelerator() if hasattr(torch, "accelerator") else None
    acc_s = str(acc) if acc else None
    try:
        device = torch.device(name)
    except RuntimeError as e:
        add("device", "fail", "no %r device in this torch: %s" % (name, e),
            causes=DEVICE_CAUSES, accelerator=acc_s)
        return None
    if device.type == "cpu":
        count, available = 1, True
    elif device.type == "cuda":
        count, available = torch.cuda.device_count(), torch.cuda.is_available()
    else:
        mod = getattr(torch, device.type, None)
        available = bool(mod and mod.is_available())
        count = mod.device_count() if mod else 0
    if not available or count == 0:
        add("device", "fail", "%s device not available (count %d)" % (name, count),
            accelerator=acc_s,
            causes=["driver not loaded or no devices visible (neuron-ls)",
                    "device autoload disabled (TORCH_DEVICE_BACKEND_AUTOLOAD=0)",
                    "another PrivateUse1 backend registered first"])
        return None
    add("device", "pass", "%s: %d device%s (current accelerator: %s)"
        % (name, count, "" if count == 1 else "s", acc), count=count, accelerator=acc_s)
    return device


def run_device_steps(torch, opts, extra):
    step("device")
    name = opts["device"]
    ident, emu = backend_identity(torch, name)
    ident["emulated"] = ident["emulated"] and name == "neuron"  # cpu/cuda runs are real
    extra["backend"] = ident
    extra["emulated"] = ident["emulated"]
    device = open_device(torch, name)
    if device is None:
        return
    api = fallback_api(torch, emu) if device.type not in ("cpu", "cuda") else None
    if api is not None and hasattr(api, "clear_fallback_ops"):
        api.clear_fallback_ops()
    elif api is not None and hasattr(api, "clear_op_tracking"):
        api.clear_op_tracking()
    matmul(torch, device, opts)
    if opts.get("backward"):
        step("backward")
        mlp(torch, device, opts, compiled=False)
    if opts.get("compile"):
        step("compile")
        mlp(torch, device, opts, compiled=True)
    fallback_step(api, device, opts)


def fallback_step(api, device, opts):
    step("fallback")
    if api is None:
        add("fallback", "skip", "no fallback tracking on %s" % device.type)
        return
    ops = list(api.get_fallback_ops())
    status = "pass" if not ops else ("fail" if opts.get("no_fallback") else "warn")
    add("fallback", status, ("%d op(s) fell back to CPU: %s" % (len(ops), ", ".join(ops)))
        if ops else "no op fell back to CPU", ops=ops)


def tolerances(opts):
    rtol, atol = TOL[opts["dtype"]]
    rtol = opts.get("rtol") if opts.get("rtol") is not None else rtol
    atol = opts.get("atol") if opts.get("atol") is not None else atol
    return rtol, atol


def timed(torch, device, fn, repeat):
    """(result, first call s, [steady call s...]) of fn() on the device, synchronized."""
    t0 = time.perf_counter()
    out = fn()
    sync(torch, device)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync(torch, device)
        times.append(time.perf_counter() - t0)
    return out, first, times


def matmul(torch, device, opts):
    step("matmul")
    n, dtype_name = opts["size"], opts["dtype"]
    dtype = getattr(torch, dtype_name)
    rtol, atol = tolerances(opts)
    need = 4 * n * n * torch.empty((), dtype=dtype).element_size() + 3 * n * n * 4
    avail = host_memory()
    if avail is not None and need > avail:
        add("matmul", "fail", "out of memory: --size %d needs about %.1f GiB of host memory, "
            "%.1f GiB are free" % (n, need / 2**30, avail / 2**30), size=n)
        return
    g = torch.Generator().manual_seed(opts.get("seed", 0))
    try:
        a = torch.randn(n, n, generator=g).to(dtype)
        b = torch.randn(n, n, generator=g).to(dtype)
        want = a.float() @ b.float()
        (da, db), transfer, _ = timed(torch, device, lambda: (a.to(device), b.to(device)), 0)
        out, first, times = timed(torch, device, lambda: da @ db, opts["iterations"])
    except RuntimeError as e:
        msg = str(e).splitlines()[0][:300]
        oom = "out of memory" in msg.lower() or "not enough memory" in msg.lower()
        add("matmul", "fail", ("out of memory: " if oom else "matmul failed: ") + msg, size=n)
        return
    cmp = compare(torch, out, want, rtol, atol)
    med = statistics.median(times) if times else first
    data = dict(size=n, dtype=dtype_name, rtol=rtol, atol=atol, first_call_s=first,
                transfer_s=transfer, iterations=len(times), median_s=med,
                min_s=min(times) if times else None, max_s=max(times) if times else None,
                stdev_s=statistics.pstdev(times) if len(times) > 1 else 0.0,
                tflops=2.0 * n ** 3 / med / 1e12 if med > 0 else None, **cmp)
    add("matmul", "pass" if cmp["ok"] else "fail", matmul_summary(data), **data)


def matmul_summary(d):
    n = d["size"]
    summary = ("%dx%d %s: max abs err %.3g, max rel err %.3g; first call %.4fs, steady "
               "median %.5fs (%.3g TFLOP/s)" % (n, n, d["dtype"], d["max_abs_error"],
                                                 d["max_rel_error"], d["first_call_s"],
                                                 d["median_s"], d["tflops"] or 0))
    if not d["ok"]:
        summary = "MISMATCH vs CPU: %d of %d elements outside rtol=%g atol=%g; " % (
            d["mismatched"], d["elements"], d["rtol"], d["atol"]) + summary
    return summary


def train_step(torch, m, xx, yy):
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(m(xx), yy)
    loss.backward()
    opt.step()
    return loss


def compile_backend(device):
    """The device's own backend: "neuron" on the neuron device, the emulator's too (it
    registers "neuron" as AWS's does), so the neuron compile path is what gets smoke-tested."""
    return ("neuron" if device.type == "neuron" else
            "inductor" if device.type == "cuda" else "aot_eager")


def mlp_matches(torch, ref, dev_model, loss, ref_loss):
    """(parameters, gradients and loss match the CPU's, the worst absolute error)."""
    worst = 0.0
    ok = abs(float(loss.detach().cpu()) - float(ref_loss)) <= 1e-4 + 1e-4 * abs(float(ref_loss))
    for p_ref, p_dev in zip(ref.parameters(), dev_model.parameters(), strict=True):
        c = compare(torch, p_dev, p_ref, 1e-4, 1e-5)
        g = compare(torch, p_dev.grad, p_ref.grad, 1e-4, 1e-5) if p_dev.grad is not None \
            else {"ok": False, "max_abs_error": math.inf}
        worst = max(worst, c["max_abs_error"], g["max_abs_error"])
        ok = ok and c["ok"] and g["ok"]
    return ok, worst


def mlp(torch, device, opts, compiled):
    import copy
    name = "compile" if compiled else "backward"
    torch.manual_seed(opts.get("seed", 0))
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                torch.nn.Linear(128, 10))
    x, y = torch.randn(32, 64), torch.randn(32, 10)
    ref = copy.deepcopy(model)
    dev_model = copy.deepcopy(model).to(device)
    ref_loss = train_step(torch, ref, x, y)
    backend = compile_backend(device) if compiled else None
    try:
        fn = torch.compile(dev_model, backend=backend, dynamic=False) if compiled else dev_model
        xd, yd = x.to(device), y.to(device)
        loss, first, _ = timed(torch, device, lambda: train_step(torch, fn, xd, yd), 0)
        _, _, times = timed(torch, device, lambda: fn(xd), 3) if compiled else (None, 0, [])
    except Exception as e:
        add(name, "fail", "%s failed%s: %s: %s" % (
            "torch.compile" if compiled else "forward/backward",
            " (backend %s)" % backend if backend else "", type(e).__name__,
            str(e).splitlines()[0][:300] if str(e) else ""), backend=backend,
            error=traceback.format_exc(limit=4)[-2000:])
        return
    ok, worst = mlp_matches(torch, ref, dev_model, loss, ref_loss)
    data = dict(first_call_s=first, backend=backend, max_abs_error=worst,
                steady_median_s=statistics.median(times) if times else None)
    what = ("torch.compile(backend=%r, dynamic=False)" % backend) if compiled else \
        "MLP forward+backward+SGD step"
    summary = "%s: %s vs CPU (max abs err %.3g); first call %.3fs" % (
        what, "gradients and parameters match" if ok else "MISMATCH", worst, first)
    if times:
        summary += ", steady forward %.5fs" % data["steady_median_s"]
    add(name, "pass" if ok else "fail", summary, **data)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        add("internal", "error", "smoke script crashed", error=traceback.format_exc())
        finish({})
