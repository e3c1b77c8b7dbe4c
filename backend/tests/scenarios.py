"""Emulator scenarios, run INSIDE a target venv with torch (one process for all of them).

`python scenarios.py` prints {"name": {"ok": bool, "error": str|None}} as JSON. Each scenario
asserts; the outer pytest (test_emulator.py) turns each into its own test.
"""

import json
import os
import sys
import traceback
import warnings

SCENARIOS = {}
DEVICES = int(os.environ.get("NEURON_EMULATOR_DEVICES", "1"))


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
def autoload_registers_neuron():
    import neuron_emulator
    import torch

    assert neuron_emulator.is_loaded(), neuron_emulator.status()
    assert neuron_emulator.EMULATED is True and torch.neuron.is_emulated() is True
    assert torch._C._get_privateuse1_backend_name() == "neuron"
    assert neuron_emulator.status()["reason"] == "loaded"


@scenario
def accelerator_api():
    import torch

    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("neuron")
    assert torch.accelerator.device_count() == DEVICES
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.synchronize()  # must not raise
    assert torch.neuron.is_available() and torch.neuron.device_count() == DEVICES
    assert torch.device("neuron").type == "neuron"


@scenario
def factories_and_copies():
    import torch

    x = torch.randn(3, 4, device="neuron")
    assert x.device == torch.device("neuron", 0) and x.shape == (3, 4)
    t = torch.tensor([1.0, 2.0, 3.0], device="neuron")
    assert t.device.type == "neuron" and t.cpu().tolist() == [1.0, 2.0, 3.0]
    assert torch.zeros(2, 2, device="neuron").cpu().sum().item() == 0
    assert torch.full((2,), 7.0, device="neuron").cpu().tolist() == [7.0, 7.0]
    assert torch.arange(4, device="neuron").cpu().tolist() == [0, 1, 2, 3]
    c = torch.randn(5, 6)
    n = c.to("neuron")
    assert n.device.type == "neuron" and torch.equal(n.cpu(), c)
    assert type(n.cpu()) is torch.Tensor and n.cpu().device.type == "cpu"
    assert torch.equal(c.to(torch.device("neuron:0")).to("cpu"), c)
    assert "device='neuron:0'" in repr(n)
    assert f"{n.sum():.2f}" == f"{c.sum().item():.2f}"


@scenario
def matmul_views():
    import torch

    a, b = torch.randn(8, 16), torch.randn(16, 4)
    na, nb = a.to("neuron"), b.to("neuron")
    torch.testing.assert_close((na @ nb).cpu(), a @ b)
    torch.testing.assert_close((nb.t() @ na.t()).cpu(), b.t() @ a.t())  # transposed views
    torch.testing.assert_close((na[2:6, ::2] @ nb[::2]).cpu(), a[2:6, ::2] @ b[::2])  # slices
    torch.testing.assert_close(torch.bmm(na.view(2, 4, 16), nb.expand(2, 16, 4)).cpu(),
                               torch.bmm(a.view(2, 4, 16), b.expand(2, 16, 4)))


@scenario
def training_step_sgd_and_adam():
    import torch

    torch.manual_seed(0)
    x, y = torch.randn(16, 8), torch.randn(16, 2)
    for opt_cls in (torch.optim.SGD, torch.optim.Adam):
        torch.manual_seed(1)
        cpu_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                        torch.nn.Linear(16, 2))
        torch.manual_seed(1)
        dev_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                        torch.nn.Linear(16, 2)).to("neuron")
        assert all(p.device.type == "neuron" for p in dev_model.parameters())
        for model, xx, yy in ((cpu_model, x, y), (dev_model, x.to("neuron"), y.to("neuron"))):
            opt = opt_cls(model.parameters(), lr=0.01)
            loss = torch.nn.functional.mse_loss(model(xx), yy)
            loss.backward()
            opt.step()
        for pc, pd in zip(cpu_model.parameters(), dev_model.parameters(), strict=True):
            assert pd.grad.device.type == "neuron"
            torch.testing.assert_close(pd.detach().cpu(), pc.detach())


@scenario
def autocast_bfloat16():
    import torch

    lin = torch.nn.Linear(8, 4).to("neuron")
    x = torch.randn(2, 8, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        out = lin(x)
        mm = torch.mm(x, x.t())
        s = (x + 1.0)
    assert out.dtype == torch.bfloat16 and mm.dtype == torch.bfloat16
    assert s.dtype == torch.float32  # not a matmul-like op: left alone
    assert lin(x).dtype == torch.float32


@scenario
def mixing_devices_raises():
    import torch

    n, c = torch.randn(3, 3, device="neuron"), torch.randn(3, 3)
    for op in (lambda: n + c, lambda: c @ n, lambda: torch.cat([n, c])):
        try:
            op()
        except RuntimeError as e:
            assert "Expected all tensors to be on the same device" in str(e), e
            assert "neuron:0" in str(e) and "cpu" in str(e)
        else:
            raise AssertionError("mixing neuron and cpu tensors was accepted")
    assert (n * torch.tensor(2.0)).device.type == "neuron"  # a 0-dim CPU scalar is allowed


@scenario
def fallback_tracking():
    import neuron_emulator
    import torch

    torch.neuron.clear_fallback_ops()
    x = torch.randn(4, 4, device="neuron")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        (x @ x).relu().sum()
        assert neuron_emulator.get_fallback_ops() == []
        torch.cumprod(x, 0)
        torch.cumprod(x, 1)
        torch.sort(x)
    cats = [i for i in w if issubclass(i.category, neuron_emulator.NeuronFallbackWarning)]
    assert len(cats) == 2, [str(i.message) for i in cats]  # once per op
    assert torch.neuron.get_fallback_ops() == ["aten::cumprod", "aten::sort"]
    assert neuron_emulator.get_fallback_counts()["aten::cumprod"] == 2
    assert "aten::cumprod" not in neuron_emulator.get_executed_ops()  # on the CPU, not the device
    neuron_emulator.clear_fallback_ops()
    assert torch.neuron.get_fallback_ops() == []


@scenario
def in_place_shape_changes_resync():
    import torch

    y = torch.zeros(2, 3, device="neuron")
    y.resize_(4, 5)
    assert y.shape == (4, 5)
    y = torch.zeros(2, 3, device="neuron")
    y.t_()
    assert y.shape == (3, 2) and y.stride() == (1, 3)
    x = torch.randn(3, 4, device="neuron")
    out = torch.empty(0, device="neuron")
    r = torch.add(x, x, out=out)
    assert r is out and out.shape == (3, 4)
    torch.testing.assert_close(out.cpu(), 2 * x.cpu())


@scenario
def memory_limit_and_accounting():
    import torch

    try:
        torch.empty(200_000, 200_000, device="neuron")  # 149 GiB of float32
    except torch.OutOfMemoryError as e:
        assert "out of device memory" in str(e), e
    else:
        raise AssertionError("a 149 GiB allocation succeeded")
    torch.neuron.synchronize()
    base = torch.neuron.memory_allocated()
    torch.neuron.reset_peak_memory_stats()
    x = torch.empty(1024, 1024, device="neuron")  # 4 MiB
    view = x[:10]
    assert torch.neuron.memory_allocated() - base == 4 << 20, torch.neuron.memory_allocated()
    y = torch.empty(1024, device="neuron:1")
    assert torch.neuron.memory_allocated(1) >= 4096 and torch.neuron.memory_allocated(0) - base \
        == 4 << 20  # per device
    del x
    assert torch.neuron.memory_allocated() - base == 4 << 20  # the view keeps the storage
    del view
    assert torch.neuron.memory_allocated() == base
    assert torch.neuron.max_memory_allocated() - base == 4 << 20
    assert torch.neuron.memory_reserved() >= torch.neuron.memory_allocated() + (4 << 20)
    stats = torch.neuron.memory_stats()
    assert stats["allocated_bytes.all.current"] == base and stats["num_ooms"] >= 1
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == base
    torch.neuron.empty_cache()
    assert torch.neuron.memory_reserved() == torch.neuron.memory_allocated()
    free, total = torch.neuron.mem_get_info()
    assert total == 24 << 30 and free == total - base  # a logical core of a trn2.3xlarge
    props = torch.neuron.get_device_properties(0)
    assert props.total_memory == 24 << 30 and "emulated" in props.name
    # torch.accelerator's memory functions answer for the neuron device
    assert torch.accelerator.memory_allocated() == base
    assert torch.accelerator.max_memory_allocated(1) >= 4096
    assert torch.accelerator.memory_stats()["allocated_bytes.all.current"] == base
    assert torch.accelerator.get_memory_info()[1] == 24 << 30
    del y


@scenario
def devices_and_indices():
    import torch

    n = torch.neuron.device_count()
    assert n == DEVICES and torch.accelerator.device_count() == n
    x = torch.randn(2, 3, device="neuron:1")
    assert x.device == torch.device("neuron", 1) and (x * 2).device.index == 1
    assert torch.zeros(2).to("neuron:2").device.index == 2
    assert x.to("neuron:3").device.index == 3 and x.to("neuron").device.index == 0
    assert "device='neuron:1'" in repr(x)
    try:
        x + torch.randn(2, 3, device="neuron:0")
    except RuntimeError as e:
        assert "neuron:1 and neuron:0" in str(e), e
    else:
        raise AssertionError("two neuron devices mixed in one op")
    for bad in (lambda: torch.empty(1, device=f"neuron:{n}"),
                lambda: torch.neuron.set_device(n), lambda: torch.zeros(1).to(f"neuron:{n}")):
        try:
            bad()
        except RuntimeError as e:
            assert "invalid device index" in str(e) and f"{n} devices" in str(e), e
        else:
            raise AssertionError("an invalid device index was accepted")
    torch.neuron.set_device(2)
    assert torch.neuron.current_device() == 2 == torch.accelerator.current_device_index()
    assert torch.randn(1, device="neuron").device.index == 2
    with torch.neuron.device(1):
        assert torch.empty(1, device="neuron").device.index == 1
    with torch.accelerator.device_index(3):
        assert torch.accelerator.current_device_index() == 3
    assert torch.neuron.current_device() == 2
    torch.accelerator.set_device_index(0)
    assert torch.neuron.current_device() == 0
    m = torch.nn.Linear(3, 2).to("neuron:1")
    assert m.weight.device.index == 1 and m(x).device.index == 1


@scenario
def backward_on_every_device_index():
    import torch

    for i in range(DEVICES):
        w = torch.randn(3, device=f"neuron:{i}", requires_grad=True)
        (w * w).sum().backward()
        assert w.grad.device.index == i and torch.allclose(w.grad.cpu(), 2 * w.detach().cpu())
        m = torch.nn.Linear(3, 2).to(f"neuron:{i}")
        m(w.detach()).sum().backward()
        assert m.weight.grad.device.index == i


@scenario
def rng_seeding():
    import torch

    torch.neuron.manual_seed(7)
    a = torch.randn(5, device="neuron")
    assert torch.neuron.initial_seed() == 7
    torch.neuron.manual_seed(7)
    b = torch.randn(5, device="neuron")
    assert torch.equal(a.cpu(), b.cpu())
    state = torch.neuron.get_rng_state()
    c = torch.rand(4, device="neuron")
    torch.neuron.set_rng_state(state)
    assert torch.equal(c.cpu(), torch.rand(4, device="neuron").cpu())
    torch.manual_seed(3)  # seeds every device too
    d = torch.randn(3, device="neuron").cpu()
    torch.manual_seed(3)
    assert torch.equal(d, torch.randn(3, device="neuron").cpu())
    g = torch.Generator(device="neuron")
    assert g.device == torch.device("neuron", 0) and isinstance(g, torch.Generator)
    assert isinstance(torch.Generator(), torch.Generator)  # a CPU generator still is one
    g.manual_seed(11)
    e = torch.randn(4, generator=g, device="neuron")
    g.manual_seed(11)
    assert torch.equal(e.cpu(), torch.randn(4, generator=g, device="neuron").cpu())
    torch.neuron.manual_seed(5)
    p = torch.nn.functional.dropout(torch.ones(64, device="neuron"), 0.5).cpu()
    torch.neuron.manual_seed(5)
    assert torch.equal(p, torch.nn.functional.dropout(torch.ones(64, device="neuron"), 0.5).cpu())
    torch.neuron.seed()
    assert isinstance(torch.neuron.initial_seed(), int)


@scenario
def streams_and_events():
    import torch

    s = torch.neuron.Stream()
    assert s.query() and torch.neuron.current_stream() == torch.neuron.default_stream()
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() == s
    assert torch.neuron.current_stream() != s
    start, end = torch.neuron.Event(enable_timing=True), torch.neuron.Event(enable_timing=True)
    start.record()
    torch.randn(64, 64, device="neuron") @ torch.randn(64, 64, device="neuron")
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    ev = s.record_event()
    s.wait_event(ev)
    s.synchronize()
    x = torch.randn(3, device="neuron")
    x.record_stream(torch.Stream(device="neuron"))  # a no-op, as everything is synchronous


@scenario
def beta_limitations():
    import neuron_emulator
    import torch

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x = torch.tensor([1.0 + 1e-12, 1.0], dtype=torch.float64).to("neuron")
        torch.ones(2, dtype=torch.float64, device="neuron")
    assert x.dtype == torch.float64
    assert x.cpu()[0].item() == 1.0  # the float64 digits beyond float32 are gone
    hits = [i for i in w if "float64" in str(i.message)]
    assert len(hits) == 1, [str(i.message) for i in w]  # warns once
    checks = {
        "torch.sparse": lambda: torch.randn(3, 3).to_sparse().to("neuron"),
        "torch.sparse ": lambda: torch.randn(3, 3, device="neuron").to_sparse(),
        "torch.nested": lambda: torch.nested.nested_tensor(
            [torch.randn(2, device="neuron"), torch.randn(3, device="neuron")]),
        "torch.func": lambda: torch.func.vmap(torch.sin)(torch.randn(3, device="neuron")),
        "torch.func ": lambda: torch.func.grad(lambda t: t.sin().sum())(
            torch.randn(3, device="neuron")),
    }
    for kind, fn in checks.items():
        try:
            fn()
        except RuntimeError as e:
            assert kind.strip() in str(e) and "beta" in str(e), (kind, e)
            assert isinstance(e, neuron_emulator.NeuronBetaLimitationError), (kind, type(e))
        else:
            raise AssertionError(f"{kind.strip()} ran on the neuron device")


@scenario
def torch_neuronx_op_tracking():
    import importlib.util

    import torch
    import torch_neuronx

    assert torch_neuronx.EMULATED is True
    assert importlib.util.find_spec("torch_neuronx").origin == "neuron-emulator"
    torch_neuronx.clear_op_tracking()
    x = torch.randn(4, 4, device="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.cumprod(x, 0)
        torch.cumprod(x, 1)
    y = torch.nn.functional.linear(x, x)
    assert y.device.type == "neuron"
    assert torch_neuronx.get_fallback_ops() == ["aten::cumprod"]  # one entry per op
    executed = torch_neuronx.get_executed_ops()
    assert isinstance(executed, list) and "aten::cumprod" not in executed and \
        any(o in executed for o in ("aten::addmm", "aten::mm", "aten::linear")), executed
    assert all(n.startswith("aten::") for n in executed), executed
    torch_neuronx.clear_op_tracking()
    assert torch_neuronx.get_fallback_ops() == [] and torch_neuronx.get_executed_ops() == []


def _compile_counts():
    import torch

    return {k: v for k, v in torch.neuron.get_dynamo_metrics().items()
            if k in ("compilations", "recompilations", "cache_hits")}


@scenario
def compile_backend_neuron():
    import torch

    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()

    def f(x, w):
        return (x @ w).relu().sum(dim=1)

    w = torch.randn(8, 3, device="neuron", requires_grad=True)
    g = torch.compile(f, backend="neuron", dynamic=False)
    x4 = torch.randn(4, 8, device="neuron")
    out = g(x4, w)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), f(x4, w).detach().cpu())
    out.sum().backward()
    assert w.grad.device.type == "neuron"
    g(x4, w)
    g(torch.randn(6, 8, device="neuron"), w)  # a new shape recompiles
    m = _compile_counts()
    assert m == {"compilations": 2, "recompilations": 1, "cache_hits": 1}, m
    torch.neuron.reset_dynamo_metrics()
    assert _compile_counts() == {"compilations": 0, "recompilations": 0, "cache_hits": 0}
    # the default (dynamic=None) still compiles once per shape on the device
    torch._dynamo.reset()
    h = torch.compile(f, backend="neuron")
    for rows in (2, 3, 5, 3):
        h(torch.randn(rows, 8, device="neuron"), w)
    m = _compile_counts()
    assert m["compilations"] == 3 and m["recompilations"] == 2 and m["cache_hits"] == 1, m


@scenario
def compiling_a_cpu_module_has_no_graph_break():
    """The emulator wraps torch.accelerator.current_stream, which Dynamo itself calls while it
    traces a module: that must not break the graph of code that never touches the device."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    torch.compile(m, backend="aot_eager", dynamic=False)(torch.randn(4, 8)).sum().backward()
    assert dict(counters["graph_break"]) == {}, dict(counters["graph_break"])
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    assert torch.accelerator.current_accelerator().type == "neuron"


@scenario
def compile_rules():
    import torch

    torch._dynamo.reset()

    def f(x):
        return torch.cumprod(x, 0) * 2

    x = torch.randn(4, 4, device="neuron")
    try:
        torch.compile(f, backend="neuron")(x)
    except Exception as e:
        assert "aten::cumprod" in str(e) and "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION" in str(e), e
    else:
        raise AssertionError("a graph with an unsupported op compiled")
    os.environ["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"] = "0"
    try:
        torch._dynamo.reset()
        torch.neuron.clear_fallback_ops()
        torch.testing.assert_close(torch.compile(f, backend="neuron")(x).cpu(), f(x).cpu())
        assert "aten::cumprod" in torch.neuron.get_fallback_ops()
        assert torch.neuron.get_dynamo_metrics()["fallback_graphs"] >= 1
    finally:
        del os.environ["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"]
    try:
        torch.compile(lambda t: t * 2, backend="neuron", dynamic=True)(x)
    except Exception as e:
        assert "dynamic=True" in str(e), e
    else:
        raise AssertionError("dynamic=True was accepted")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.compile(lambda t: t + 1, backend="neuron", mode="reduce-overhead")(x)
    assert any("mode='reduce-overhead'" in str(i.message) for i in w), [str(i.message) for i in w]
    torch.compiler.set_default_backend("neuron")
    try:
        torch._dynamo.reset()
        torch.neuron.reset_dynamo_metrics()
        torch.compile(lambda t: t - 1)(x)
        assert torch.neuron.get_dynamo_metrics()["compilations"] == 1
    finally:
        torch.compiler.set_default_backend(None)


# --- AWS TorchNeuron page examples, unchanged apart from asserts on what they print ----------
# (docs: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/ — the torch.neuron module
# reference, the supported-operators page, the torch.compile backend reference)

@scenario
def aws_module_reference_check():
    import torch

    assert torch.neuron.is_available()
    print(torch.neuron.device_count(), torch.accelerator.current_accelerator())
    assert str(torch.accelerator.current_accelerator()) == "neuron"


@scenario
def aws_quick_start_matmul():
    import torch

    device = torch.device("neuron")
    a = torch.randn(128, 256, device=device)
    b = torch.randn(256, 64, device=device)
    c = torch.matmul(a, b)
    torch.neuron.synchronize()
    torch.testing.assert_close(c.cpu(), a.cpu() @ b.cpu())
    assert c.device.type == "neuron"


@scenario
def aws_accelerator_detection():
    import torch

    device = (torch.accelerator.current_accelerator() if torch.accelerator.is_available()
              else torch.device("cpu"))
    model = torch.nn.Linear(16, 4).to(device)
    out = model(torch.randn(8, 16, device=device))
    assert device.type == "neuron" and out.device.type == "neuron"


@scenario
def aws_training_loop():
    import torch

    device = torch.device("neuron")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    x = torch.randn(64, 32).to(device)
    y = torch.randint(0, 10, (64,)).to(device)
    for _ in range(20):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses


@scenario
def aws_compile_dynamic_false():
    import torch

    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 8)).to("neuron")
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    x = torch.randn(16, 32, device="neuron")
    out = compiled(x)  # the first call compiles
    out = compiled(x)  # later calls with the same shape reuse the compiled graph
    torch.testing.assert_close(out.detach().cpu(), model(x).detach().cpu())
    print(torch.neuron.get_dynamo_metrics())


@scenario
def aws_memory_calls():
    import torch

    x = torch.randn(1024, 1024, device="neuron")
    torch.neuron.synchronize()
    print(f"allocated: {torch.neuron.memory_allocated() / 2**20:.1f} MiB")
    print(f"peak:      {torch.neuron.max_memory_allocated() / 2**20:.1f} MiB")
    stats = torch.neuron.memory_stats()
    print(stats["allocated_bytes.all.current"])
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.memory_allocated() >= x.numel() * 4


@scenario
def aws_fallback_ops():
    import torch
    import torch_neuronx

    torch_neuronx.clear_op_tracking()
    x = torch.randn(8, 8, device="neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = torch.linalg.qr(x)
    print("fell back to CPU:", torch_neuronx.get_fallback_ops())
    print("ran:", torch_neuronx.get_executed_ops())
    assert "aten::linalg_qr" in torch_neuronx.get_fallback_ops(), torch_neuronx.get_fallback_ops()
    assert y[0].device.type == "neuron"


def main():
    only = sys.argv[1:]
    out = {}
    for name, fn in SCENARIOS.items():
        if only and name not in only:
            continue
        try:
            fn()
            out[name] = {"ok": True, "error": None}
        except BaseException:
            out[name] = {"ok": False, "error": traceback.format_exc()}
    sys.stdout.write("@@SCENARIOS@@" + json.dumps(out) + "@@SCENARIOS@@\n")


if __name__ == "__main__":
    main()
