"""Issue 37's fidelity items: the emulated device behaves as AWS's TorchNeuron pages say.

Run INSIDE a target venv with torch (one process for all of them), as scenarios.py:
`python fidelity_scenarios.py [name ...]` prints {"name": {"ok", "error"}} as JSON; the outer
pytest (test_fidelity.py) turns each into its own test. Each scenario's docstring names the
public page (or public source) it follows; backend/README.md's fidelity table lists them.
"""

import os
import warnings

from scenarios import SCENARIOS, main, scenario

SCENARIOS.clear()
OPS_PAGE = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/"
            "supported-operators.html")
COMPILE_REF = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/"
               "reference-torch-compile.html")
ENV_PAGE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"


def _quiet():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")
    return ctx


def _counters():
    """The compile counts: torch._dynamo's counters["neuron"], where the backend keeps them."""
    from torch._dynamo.utils import counters

    return counters["neuron"]


@scenario
def histc_int_runs_on_the_device():
    """Item 15. transformers' MoE routing calls histc on an int tensor on every non-CPU device;
    the device has a histc kernel (OPS_PAGE: classification Y; CUDA's histc takes integers and
    returns the input's dtype), so it must neither fall back nor fail on the CPU's missing int
    kernel. https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/supported-operators.html"""
    import neuron_emulator
    import torch

    neuron_emulator.clear_fallback_ops()
    ids = torch.tensor([0, 2, 2, 3, 7, 1], dtype=torch.int32)
    got = torch.histc(ids.to("neuron"), bins=4, min=0, max=3)
    assert got.device.type == "neuron" and got.dtype == torch.int32, got
    assert got.cpu().tolist() == [1, 1, 2, 1], got
    out = torch.empty(0, dtype=torch.int64, device="neuron")
    torch.histc(ids.long().to("neuron"), bins=2, min=0, max=3, out=out)
    assert out.cpu().tolist() == [2, 3], out
    f = torch.histc(ids.float().to("neuron"), bins=4, min=0, max=3)
    assert f.dtype == torch.float32 and f.cpu().tolist() == [1.0, 1.0, 2.0, 1.0]
    assert "aten::histc" not in neuron_emulator.get_fallback_ops()


@scenario
def cpu_index_tensors_are_allowed():
    """Item 14. PyTorch's indexing rule, as on CUDA: the indices of x[idx] / index_put_ may live
    on the CPU or on x's device; another device's tensor in any other op is still an error.
    https://docs.pytorch.org/docs/stable/generated/torch.Tensor.index_put_.html"""
    import torch

    x = torch.arange(15.0).view(5, 3)
    d = x.to("neuron")
    idx = torch.tensor([4, 0])
    got = d[idx]
    assert got.device.type == "neuron" and torch.equal(got.cpu(), x[idx])
    assert torch.equal(d[idx, torch.tensor([1, 2])].cpu(), x[idx, torch.tensor([1, 2])])
    assert torch.equal(d[idx.to("neuron")].cpu(), x[idx])
    d.index_put_((idx,), torch.zeros(3, device="neuron"))
    x.index_put_((idx,), torch.zeros(3))
    assert torch.equal(d.cpu(), x)
    d[torch.tensor([1])] = torch.ones(3, device="neuron")
    assert d.cpu()[1].tolist() == [1.0, 1.0, 1.0]
    try:
        d + torch.ones(5, 3)
    except RuntimeError as e:
        assert "same device" in str(e), e
    else:
        raise AssertionError("a CPU operand (not an index) was accepted")


@scenario
def tolist_and_item_on_device_tensors():
    """Also (issue 40). `.tolist()` / `.item()` copy a device tensor's values to the host, as on
    every PyTorch device (HF generate calls them).
    https://docs.pytorch.org/docs/stable/generated/torch.Tensor.tolist.html"""
    import torch

    t = torch.tensor([[1, 2], [3, 4]]).to("neuron")
    assert t.tolist() == [[1, 2], [3, 4]]
    assert t[1, 0].item() == 3 and t.sum().tolist() == 10
    assert torch.tensor([0.5]).to("neuron").tolist() == [0.5]


@scenario
def tensor_made_inside_compiled_code_moves_to_the_device():
    """Also (issue 40). A tensor built inside a compiled function and moved to the device
    (`torch.tensor(mid - 1).to(x.device)`, HF DeBERTa-v2 and Mistral's sliding window) compiles
    with backend="neuron". https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"""
    import torch

    def f(x):
        k = torch.tensor(3).to(x.device)
        return x * k + torch.tensor([1.0, 2.0]).to(x.device)

    torch._dynamo.reset()
    x = torch.ones(2)
    y = torch.compile(f, backend="neuron", fullgraph=True)(x.to("neuron"))
    assert y.device.type == "neuron" and y.cpu().tolist() == [4.0, 5.0]


@scenario
def compile_without_backend_picks_neuron():
    """Item 1. The torch.compile reference: backend "'neuron'. Explicitly set, or auto-selected
    when running on a Neuron device". Without backend=, neuron tensors compile with the neuron
    backend (its rules apply: an unsupported op fails the graph); CPU tensors keep inductor.
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"""
    import torch

    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()
    m = torch.nn.Linear(4, 2).to("neuron")
    out = torch.compile(m)(torch.randn(3, 4, device="neuron"))
    assert out.device.type == "neuron"
    assert _counters()["compilations"] == 1, _counters()
    try:
        torch.compile(lambda t: t.sin() * 2, dynamic=True)(torch.randn(3, device="neuron"))
    except Exception as e:
        assert "dynamic=True" in str(e), e
    else:
        raise AssertionError("inductor compiled a neuron graph (dynamic=True accepted)")
    torch.neuron.reset_dynamo_metrics()
    torch._dynamo.reset()
    torch.compile(lambda t: t * 2)(torch.randn(3))  # CPU: inductor, not neuron
    assert _counters()["compilations"] == 0


@scenario
def fallback_execution_option_and_env_var():
    """Item 3. The env-vars page: TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION (bool, default True):
    a graph that fails to compile raises instead of falling back to eager execution; 0 falls
    back; "the fallback_execution compile option overrides it".
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"""
    import neuron_emulator
    import torch

    def f(x):
        return torch.linalg.qr(x)[0] * 2  # linalg_qr: no device kernel

    x = torch.randn(4, 4, device="neuron")
    ref = f(x.cpu())

    def compiled(**kw):
        torch._dynamo.reset()
        return torch.compile(f, backend="neuron", **kw)(x)

    def refused(**kw) -> bool:
        try:
            compiled(**kw)
        except Exception as e:
            assert "aten::linalg_qr" in str(e), e
            return True
        return False

    env = "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"
    ctx = _quiet()
    try:
        assert os.environ.get(env) is None and refused()  # the default: 1
        torch.testing.assert_close(compiled(options={"fallback_execution": True}).cpu(), ref)
        for off in ("0", "false", "False"):
            os.environ[env] = off
            neuron_emulator.clear_fallback_ops()
            torch.testing.assert_close(compiled().cpu(), ref)
            assert neuron_emulator.get_fallback_ops() == ["aten::linalg_qr"], off
            assert refused(options={"fallback_execution": False}), off
        for on in ("1", "true"):
            os.environ[env] = on
            assert refused(), on
    finally:
        os.environ.pop(env, None)
        ctx.__exit__(None, None, None)


@scenario
def dynamo_metrics_are_one_record_per_compiled_graph():
    """Item 9. The torch.compile reference lists torch.neuron.get_dynamo_metrics() /
    reset_dynamo_metrics() in its public helper API
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html);
    the page names no field, so the record follows the backend's published source
    (torch_neuronx/neuron_dynamo_backend/metrics.py, NeuronCompilationMetrics, in
    github.com/parmoham-aws/test-repo-parmoham@5577a2d873f688c036c58f7cf3033bc0d7d1d7f3): one
    record per compiled graph (forward and backward apart), counters["neuron"]["compiled_graphs"]
    beside them; a refused graph adds none; reset clears both."""
    import contextlib
    import dataclasses

    import torch
    from torch._dynamo.utils import counters

    fields = ["graph_id", "graph_name", "model_name", "has_collectives", "graph_node_count",
              "timestamp", "torch_neuronx_fx_passes_us", "torch_neuronx_lower_us",
              "torch_neuronx_compile_us"]
    torch._dynamo.reset()
    torch.neuron.reset_dynamo_metrics()
    assert torch.neuron.get_dynamo_metrics() == []
    w = torch.randn(8, 3, device="neuron", requires_grad=True)
    g = torch.compile(lambda x: (x @ w).relu().sum(), backend="neuron", dynamic=False)
    g(torch.randn(4, 8, device="neuron")).backward()
    recs = torch.neuron.get_dynamo_metrics()
    assert isinstance(recs, list) and len(recs) == 2, recs  # the forward and the backward graph
    assert [f.name for f in dataclasses.fields(recs[0])] == fields, recs[0]
    kinds = sorted(r.graph_name.split("_")[-2] for r in recs)
    assert kinds == ["backward", "forward"], [r.graph_name for r in recs]
    assert all(r.graph_node_count > 0 and r.graph_id and not r.has_collectives for r in recs)
    assert counters["neuron"]["compiled_graphs"] == 2, dict(counters["neuron"])
    g(torch.randn(4, 8, device="neuron"))  # the same shape: no new graph
    assert len(torch.neuron.get_dynamo_metrics()) == 2
    with contextlib.suppress(Exception):  # refused: linalg_qr has no device kernel
        torch.compile(lambda t: torch.linalg.qr(t)[0], backend="neuron")(
            torch.randn(4, 4, device="neuron"))
    assert len(torch.neuron.get_dynamo_metrics()) == 2  # a refused graph is not a record
    torch.neuron.reset_dynamo_metrics()
    assert torch.neuron.get_dynamo_metrics() == [] and not counters["neuron"]


@scenario
def a_refused_graph_ran_nothing():
    """Item 7. torch.compile reference / env-vars page: a graph the backend cannot compile
    raises (TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=1, the default): nothing of it ran, so
    tracing it leaves no executed-op and no fallback records.
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"""
    import neuron_emulator
    import torch

    x = torch.randn(4, 4, device="neuron")
    neuron_emulator.clear_fallback_ops()
    torch._dynamo.reset()
    try:
        torch.compile(lambda t: torch.linalg.qr(t.sin())[0] * 2, backend="neuron")(x)
    except Exception as e:
        assert "aten::linalg_qr" in str(e), e
    else:
        raise AssertionError("a graph with linalg_qr compiled")
    assert neuron_emulator.get_fallback_ops() == [], neuron_emulator.get_fallback_ops()
    assert neuron_emulator.get_executed_ops() == {}, neuron_emulator.get_executed_ops()
    # a compiled graph that runs records what it executed, at run time
    torch._dynamo.reset()
    torch.compile(lambda t: t.cos() + 1, backend="neuron")(x)
    assert "aten::cos" in neuron_emulator.get_executed_ops(), neuron_emulator.get_executed_ops()


@scenario
def executed_ops_are_device_ops_only():
    """Item 10. The operator page: get_executed_ops() lists what ran on the device,
    get_fallback_ops() what ran on the CPU instead; an op is in one list, not both.
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/supported-operators.html"""
    import neuron_emulator
    import torch
    import torch_neuronx

    x = torch.randn(4, 4, device="neuron")
    torch_neuronx.clear_op_tracking()
    ctx = _quiet()
    try:
        torch.linalg.qr(x)
        torch.linalg.qr(x)
        (x @ x).relu()
    finally:
        ctx.__exit__(None, None, None)
    assert torch_neuronx.get_fallback_ops() == ["aten::linalg_qr"]
    executed = torch_neuronx.get_executed_ops()
    assert "aten::linalg_qr" not in executed and "aten::mm" in executed, executed
    assert neuron_emulator.get_fallback_counts() == {"aten::linalg_qr": 2}


@scenario
def op_support_follows_the_compatibility_table():
    """Item 11. The device has kernels for cumsum, masked_select, nonzero, histc and the stable
    argsort (no fallback); linalg_ldl_factor_ex, cholesky_inverse and triangular_solve fall
    back. https://github.com/aws-neuron/torch-neuronx/blob/main/docs/torch_api_compatibility.md"""
    import neuron_emulator
    import torch

    x = torch.tensor([3.0, -1.0, 2.0, -5.0]).to("neuron")
    eye = torch.eye(3, device="neuron")
    neuron_emulator.clear_fallback_ops()
    torch.cumsum(x, 0)
    torch.masked_select(x, x > 0)
    torch.nonzero(x > 0)
    torch.histc(x, bins=3)
    assert torch.argsort(x, stable=True).cpu().tolist() == [3, 1, 2, 0]
    assert neuron_emulator.get_fallback_ops() == [], neuron_emulator.get_fallback_ops()
    ctx = _quiet()
    try:
        torch.linalg.ldl_factor_ex(eye)
        torch.cholesky_inverse(eye)
        torch.triangular_solve(eye, eye)
    finally:
        ctx.__exit__(None, None, None)
    assert neuron_emulator.get_fallback_ops() == [
        "aten::cholesky_inverse", "aten::linalg_ldl_factor_ex", "aten::triangular_solve"], \
        neuron_emulator.get_fallback_ops()


@scenario
def memory_per_logical_core_follows_hbm_and_lnc():
    """Item 2. A Trainium2 device has 96 GiB of HBM for its 8 physical NeuronCores, and a logical
    NeuronCore combines the memory of its physical cores: 24 GiB per logical core at LNC=2, 12 at
    LNC=1; a Trainium (Trn1) 32 GiB for 2 cores. NEURON_EMULATOR_MEMORY_GIB stays an override.
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/arch/trainium2_arch.html
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-features/logical-neuroncore-config.html"""
    import subprocess
    import sys

    import torch

    assert torch.neuron.mem_get_info()[1] == 24 << 30  # the default machine: trn2.3xlarge
    code = "import torch; print(torch.neuron.mem_get_info()[1] >> 30)"
    for env, want in (({"NEURON_LOGICAL_NC_CONFIG": "1"}, "12"),
                      ({"NEURON_EMULATOR_INSTANCE_TYPE": "trn1.32xlarge"}, "16"),
                      ({"NEURON_EMULATOR_INSTANCE_TYPE": "trn2.48xlarge"}, "24"),
                      ({"NEURON_EMULATOR_MEMORY_GIB": "3"}, "3")):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, **env))
        assert p.stdout.strip() == want, (env, p.stdout, p.stderr[-1500:])


@scenario
def freed_memory_stays_reserved_until_empty_cache():
    """Item 4. The caching allocator: a freed block stays reserved until empty_cache();
    memory_reserved() >= memory_allocated() at all times.
    https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management"""
    import torch

    torch.neuron.empty_cache()
    base_alloc, base_res = torch.neuron.memory_allocated(), torch.neuron.memory_reserved()
    assert base_res >= base_alloc
    x = torch.empty(1 << 20, device="neuron")  # 4 MiB
    assert torch.neuron.memory_reserved() - base_res == 4 << 20
    del x
    assert torch.neuron.memory_allocated() == base_alloc
    assert torch.neuron.memory_reserved() - base_res == 4 << 20  # still reserved
    y = torch.empty(1 << 19, device="neuron")  # reuses the reserved bytes
    assert torch.neuron.memory_reserved() - base_res == 4 << 20
    assert torch.neuron.memory_reserved() >= torch.neuron.memory_allocated()
    del y
    torch.neuron.empty_cache()
    assert torch.neuron.memory_reserved() == torch.neuron.memory_allocated() == base_alloc
    assert torch.neuron.max_memory_reserved() >= 4 << 20


@scenario
def quantized_operators_are_refused():
    """Item 6. Quantized operators are not supported on the device (the beta has no TorchAO /
    quantization integration): refused with the beta-limitation error, not run on the CPU.
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/supported-operators.html"""
    import neuron_emulator
    import torch

    x = torch.randn(4, 4, device="neuron")
    q = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.qint8)
    for what, fn in (
            ("quantize_per_tensor", lambda: torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)),
            ("quantize_per_channel", lambda: torch.quantize_per_channel(
                x, torch.ones(4), torch.zeros(4, dtype=torch.long), 0, torch.quint8)),
            ("a quantized tensor moved to the device", lambda: q.to("neuron"))):
        try:
            fn()
        except neuron_emulator.NeuronBetaLimitationError as e:
            assert "quantized" in str(e), (what, e)
        else:
            raise AssertionError(f"{what} ran on the neuron device")
    assert "aten::quantize_per_tensor" not in neuron_emulator.get_fallback_ops()


@scenario
def compilation_artifacts_are_kept_in_the_debug_dir():
    """Item 12. The env-vars page: TORCH_NEURONX_DEBUG_DIR is where compilation artifacts (FX
    graphs, ...) are saved; TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS=1 keeps them (default:
    not kept). https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/about-compiler-artifacts.html
    ("TorchNeuron writes the files of steps 1 to 3 under the debug directory")"""
    import tempfile
    from pathlib import Path

    import torch

    x = torch.randn(3, 3, device="neuron", requires_grad=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TORCH_NEURONX_DEBUG_DIR"] = tmp
        try:
            torch._dynamo.reset()
            torch.compile(lambda t: t.sin() * 2, backend="neuron")(x)
            assert list(Path(tmp).iterdir()) == []  # not kept by default
            os.environ["TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS"] = "1"
            torch._dynamo.reset()
            torch.compile(lambda t: t.cos() * 2, backend="neuron")(x).sum().backward()
        finally:
            os.environ.pop("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", None)
            os.environ.pop("TORCH_NEURONX_DEBUG_DIR", None)
        graphs = sorted(p.name for p in Path(tmp).iterdir())
        assert [g.split("_")[-1] for g in graphs] == ["forward", "backward"] or \
            sorted(g.split("_")[-1] for g in graphs) == ["backward", "forward"], graphs
        fw = next(p for p in Path(tmp).iterdir() if p.name.endswith("forward"))
        assert "aten.cos" in (fw / "aten_ops.txt").read_text()
        assert "def forward" in (fw / "fx_graph.py").read_text() and (fw / "EMULATED").exists()


@scenario
def autocast_follows_the_generic_policy_lists():
    """Item 8. torch.autocast("neuron", bfloat16) follows PyTorch's generic (CUDA-style) policy:
    softmax, exp and layer_norm run in float32, mm/linear in bfloat16, and binary_cross_entropy
    raises under autocast. https://docs.pytorch.org/docs/stable/amp.html#cuda-ops-that-can-autocast-to-float32
    (lists: pytorch/pytorch@d70fe7f33910bbe8bc8b6027388a84bb102a453d
    aten/src/ATen/autocast_mode.h)"""
    import torch
    import torch.nn.functional as F

    x = torch.randn(4, 8, device="neuron")
    w = torch.randn(8, 8, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        assert (x @ w).dtype == torch.bfloat16
        assert F.linear(x, w).dtype == torch.bfloat16
        h = F.linear(x, w)
        assert torch.softmax(h, -1).dtype == torch.float32
        assert torch.exp(h).dtype == torch.float32
        assert F.layer_norm(h, (8,)).dtype == torch.float32
        assert h.sum().dtype == torch.float32
        assert torch.softmax(h, -1, dtype=torch.bfloat16).dtype == torch.bfloat16
        try:
            F.binary_cross_entropy(torch.sigmoid(x), torch.rand(4, 8, device="neuron"))
        except RuntimeError as e:
            assert "unsafe to autocast" in str(e), e
        else:
            raise AssertionError("binary_cross_entropy ran under autocast")
        assert F.binary_cross_entropy_with_logits(h, torch.rand(4, 8, device="neuron")) \
            .dtype == torch.float32


@scenario
def cpu_inputs_of_a_compiled_graph_are_copied_to_the_device():
    """Item 5. The env-vars page: CPU inputs of a graph compiled with backend="neuron" are copied
    to the device (outputs on the device); TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 makes a
    CPU input an error. https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"""
    import torch

    m = torch.nn.Linear(4, 3).to("neuron")
    x = torch.randn(2, 4)
    ref = m(x.to("neuron")).cpu()
    for fn, args in ((m, (x,)), (lambda a, b: a @ b, (x, torch.randn(4, 2)))):
        torch._dynamo.reset()
        out = torch.compile(fn, backend="neuron")(*args)
        assert out.device.type == "neuron", out.device
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(m, backend="neuron")(x).cpu(), ref)
    os.environ["TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY"] = "1"
    try:
        torch._dynamo.reset()
        torch.compile(m, backend="neuron")(x)
    except Exception as e:
        assert "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY" in str(e), e
    else:
        raise AssertionError("a CPU input was accepted with autocopy disabled")
    finally:
        os.environ.pop("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY")


@scenario
def optimizers_take_the_foreach_path_on_the_device():
    """PyTorch picks the `_foreach_*` kernels for parameters on a device in its foreach list,
    which names the PrivateUse1 backend (`neuron`); TorchNeuron's parameters are plain tensors
    of that device, so AdamW, SGD and clip_grad_norm_ run foreach there. The emulator's
    parameters (a tensor subclass) take the same path, with the CPU's results.
    https://github.com/pytorch/pytorch/blob/v2.9.0/torch/utils/_foreach_utils.py"""
    import torch
    import torch_neuronx
    from torch.optim.optimizer import _default_to_fused_or_foreach
    from torch.utils._foreach_utils import _has_foreach_support

    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    dev = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                              torch.nn.Linear(16, 2)).to("neuron")
    dev.load_state_dict(cpu.state_dict())
    params = list(dev.parameters())
    assert _default_to_fused_or_foreach(params, False, False) == (False, True)
    assert _has_foreach_support(params, torch.device("neuron"))
    x, y = torch.randn(32, 8), torch.randn(32, 2)
    torch_neuronx.clear_op_tracking()
    for model, xx, yy in ((cpu, x, y), (dev, x.to("neuron"), y.to("neuron"))):
        opt = torch.optim.AdamW(model.parameters(), lr=0.05)
        for _ in range(3):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(xx), yy).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
    executed = torch_neuronx.get_executed_ops()
    assert any(op.startswith("aten::_foreach_") for op in executed), executed
    assert "aten::lerp_" not in executed, executed  # the per-parameter loop did not run
    for pc, pd in zip(cpu.parameters(), dev.parameters(), strict=True):
        torch.testing.assert_close(pd.detach().cpu(), pc.detach(), rtol=1e-5, atol=1e-6)


@scenario
def a_storage_is_counted_until_its_last_view_dies():
    """The caching allocator's accounting is per storage: views share their base's bytes,
    the last view frees them, a storage resized in place counts its new size.
    https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management"""
    import gc

    import torch

    gc.collect()
    base = torch.neuron.memory_allocated()
    x = torch.zeros(256, 1024, device="neuron")  # 1 MiB
    views = [x.view(1024, 256), x.t(), x[3:], x.detach(), x.reshape(-1)[::2]]
    chain = views[1].unsqueeze(0).expand(2, 1024, 256)
    assert torch.neuron.memory_allocated() - base == 1 << 20
    del x, views
    assert torch.neuron.memory_allocated() - base == 1 << 20  # `chain` holds the storage
    y = torch.empty(16, device="neuron")
    y.resize_(1024, 1024)  # 64 B -> 4 MiB, one storage
    assert torch.neuron.memory_allocated() - base == (1 << 20) + (4 << 20)
    stats = torch.neuron.memory_stats()
    del chain
    assert torch.neuron.memory_allocated() - base == 4 << 20
    del y
    assert torch.neuron.memory_allocated() == base
    assert torch.neuron.memory_stats()["allocation.all.freed"] >= \
        stats["allocation.all.freed"] + 2


if __name__ == "__main__":
    main()
