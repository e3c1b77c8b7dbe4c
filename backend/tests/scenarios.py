"""Emulator scenarios, run INSIDE a target venv with torch (one process for all of them).

`python scenarios.py` prints {"name": {"ok": bool, "error": str|None}} as JSON. Each scenario
asserts; the outer pytest (test_emulator.py) turns each into its own test.
"""

import json
import sys
import traceback
import warnings

SCENARIOS = {}


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
    assert torch.accelerator.device_count() == 1
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.synchronize()  # must not raise
    assert torch.neuron.is_available() and torch.neuron.device_count() == 1
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
        torch.cumsum(x, 0)
        torch.cumsum(x, 1)
        torch.sort(x)
    cats = [i for i in w if issubclass(i.category, neuron_emulator.NeuronFallbackWarning)]
    assert len(cats) == 2, [str(i.message) for i in cats]  # once per op
    assert torch.neuron.get_fallback_ops() == ["aten::cumsum", "aten::sort"]
    assert neuron_emulator.get_executed_ops()["aten::cumsum"] == 2
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
def memory_limit_and_memory_allocated():
    import torch

    try:
        torch.empty(200_000, 200_000, device="neuron")  # 149 GiB of float32
    except RuntimeError as e:
        assert "out of device memory" in str(e), e
    else:
        raise AssertionError("a 149 GiB allocation succeeded")
    try:
        torch.neuron.memory_allocated()
    except NotImplementedError as e:
        assert "no device allocator" in str(e)
    else:
        raise AssertionError("memory_allocated should be unsupported")


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
