"""`torch.compile(backend="neuron")` on the emulated device, with the beta's documented rules.

- `dynamic=True` is rejected; `dynamic=False` (recommended) or the default are accepted.
- Only `mode="default"` has an effect: another mode (or options) warns and is ignored.
- A graph holding an aten op the device cannot run fails to compile, naming the op, unless
  TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 (then the op falls back to the CPU and is listed by
  get_fallback_ops()).
- Each new input shape is a (re)compilation, as on the device (static shapes).
- `torch.neuron.get_dynamo_metrics()` returns one record per compiled graph (forward and
  backward graphs apart), with the fields of the backend's published `NeuronCompilationMetrics`
  (graph_id, graph_name, model_name, has_collectives, graph_node_count, timestamp and the
  three phase timings in µs); `reset_dynamo_metrics()` clears them and the `neuron` counters.
  The torch.compile reference lists both functions in its public helper API
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html);
  the fields follow torch_neuronx/neuron_dynamo_backend/metrics.py as published in
  github.com/parmoham-aws/test-repo-parmoham@5577a2d873f688c036c58f7cf3033bc0d7d1d7f3 (the page
  names no field). Like the real backend, the counts live in torch._dynamo's
  `counters["neuron"]`: compiled_graphs, and the emulator's own compilations (one per new input
  shape), recompilations, cache_hits, fallback_graphs (`compile_counters()`).

The graph is traced by AOTAutograd through the device tensor (a traceable wrapper subclass) and
run on the CPU; "compiling" checks the aten ops of the forward and backward graphs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
import time

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from neuron_emulator import _artifacts, _fallback, _state
from neuron_emulator._env import env_flag
from neuron_emulator._env import warn_once as _warn_once

_lock = threading.Lock()
_metrics = {"compilations": 0, "recompilations": 0, "cache_hits": 0, "graphs": 0,
            "fallback_graphs": 0}


class NeuronCompileError(RuntimeError):
    """torch.compile(backend="neuron") refused a graph (emulated)."""


FALLBACK_ENV = "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"
def fallback_allowed(options: dict | None = None) -> bool:
    """Whether a graph the backend cannot compile runs eagerly instead of failing. The
    `fallback_execution` compile option overrides TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION,
    whose default (1) disables fallback."""
    if options and options.get("fallback_execution") is not None:
        return bool(options["fallback_execution"])
    return not env_flag(FALLBACK_ENV, True)


@dataclasses.dataclass
class NeuronCompilationMetrics:
    """One compiled graph (the published backend's record, field for field)."""

    graph_id: str
    graph_name: str = ""
    model_name: str = ""
    has_collectives: bool = False
    graph_node_count: int = 0
    timestamp: str = ""
    torch_neuronx_fx_passes_us: int = 0
    torch_neuronx_lower_us: int = 0
    torch_neuronx_compile_us: int = 0


_records: list[NeuronCompilationMetrics] = []


def _dynamo_counters():
    from torch._dynamo.utils import counters

    return counters["neuron"]


def _count(**delta: int) -> None:
    with _lock:
        c = _dynamo_counters()
        for k, v in delta.items():
            _metrics[k] += v
            c[k] += v


def compile_counters() -> dict[str, int]:
    """The emulator's counts since the last reset: compilations (graphs compiled, one per new
    input shape), recompilations (compilations caused by a new shape of an already compiled
    function), cache_hits (calls served by an already compiled graph), graphs,
    fallback_graphs."""
    with _lock:
        return dict(_metrics)


def get_dynamo_metrics() -> list[NeuronCompilationMetrics]:
    """One record per compiled graph since the last reset, oldest first (copies)."""
    with _lock:
        return [dataclasses.replace(r) for r in _records]


def reset_dynamo_metrics() -> None:
    with _lock:
        for k in _metrics:
            _metrics[k] = 0
        _records.clear()
        _dynamo_counters().clear()


def _record(gm, kind: str, seconds: float) -> None:
    """A record of the graph just compiled (`kind`: forward or backward)."""
    nodes = list(gm.graph.nodes)
    code = getattr(gm, "code", "") or ""
    collectives = any(n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
                      and n.target.namespace in ("c10d", "_c10d_functional") for n in nodes)
    cid = torch._guards.CompileContext.current_compile_id()
    aot = getattr(torch._guards.TracingContext.try_get(), "aot_graph_name", None) or ["0"]
    model = str(getattr(cid, "frame_id", 0)) if cid is not None else "0"
    us = int(seconds * 1e6)
    with _lock:
        nth = sum(1 for r in _records if r.model_name == f"model_{model}"
                  and f"_{kind}_" in r.graph_name)
        _records.append(NeuronCompilationMetrics(
            graph_id=hashlib.sha256(code.encode()).hexdigest()[:32],
            graph_name=f"model_{model}_{aot[0] if aot else 0}_{kind}_{nth}",
            model_name=f"model_{model}", has_collectives=collectives,
            graph_node_count=len(nodes), timestamp=time.strftime("%Y%m%dT%H%M%S"),
            torch_neuronx_fx_passes_us=us, torch_neuronx_lower_us=0,
            torch_neuronx_compile_us=us))
        _dynamo_counters()["compiled_graphs"] += 1
        if collectives:
            _dynamo_counters()["graphs_with_collectives"] += 1


def _unsupported_ops(gm) -> list[str]:
    bad = set()
    for node in gm.graph.nodes:
        target = node.target
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
            packet = target.overloadpacket.__name__
            if target.namespace == "aten" and not _fallback.is_native_op(target):
                bad.add(f"aten::{packet}")
    return sorted(bad)


def _check(gm, example_inputs, allow_fallback: bool = False, kind: str = "forward"):
    start = time.perf_counter()
    _artifacts.preserve(gm, kind)
    bad = _unsupported_ops(gm)
    if bad and not allow_fallback:
        raise NeuronCompileError(
            f"neuron (emulated): compilation failed: {bad[0]} is not supported by the neuron "
            f"compiler (unsupported ops in this graph: {', '.join(bad)}). Fallback execution is "
            "disabled by default under torch.compile; set "
            "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 (or the compile option "
            "fallback_execution=True) to run such a graph eagerly, its unsupported ops on the "
            "CPU, or keep them out of the compiled region.")
    if bad:  # runs eagerly, its unsupported ops on the CPU
        _count(fallback_graphs=1)
    _record(gm, kind, time.perf_counter() - start)  # a refused graph leaves no record
    return make_boxed_func(_recording(gm))


def _recording(gm):
    """The graph's forward, recording its ops each time it runs (executed on the device, or
    fallbacks apart): AOTAutograd compiles the graph on the host tensors inside the device
    tensors, so its ops do not pass the device dispatch at run time; tracing recorded nothing."""
    entries = [_fallback.entry(n.target) for n in gm.graph.nodes
               if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)]
    forward, count = gm.forward, _fallback.count

    def run(*args):
        for e in entries:
            count(e)
        return forward(*args)
    return run


def _aot(allow_fallback: bool):
    check = functools.partial(_check, allow_fallback=allow_fallback)
    return aot_autograd(fw_compiler=check,
                        bw_compiler=functools.partial(check, kind="backward"))


def _frame_recompile() -> bool:
    cid = torch._guards.CompileContext.current_compile_id()
    return bool(cid is not None and getattr(cid, "frame_compile_id", 0))


def _signature(args) -> tuple:
    return tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else type(a) for a in args)


def _per_shape(compiled):
    """Like the device: a compiled graph serves one set of input shapes; another recompiles."""
    seen: set = set()

    def run(*args):
        sig = _signature(args)
        if sig in seen:
            _count(cache_hits=1)
        else:
            if seen:  # automatic dynamic shapes: the device still compiles per shape
                _count(compilations=1, recompilations=1)
            seen.add(sig)
        return compiled(*args)
    return run


def neuron_backend(gm, example_inputs, mode=None, options=None, **kwargs):
    """The dynamo backend registered as "neuron" (entry point `torch_dynamo_backends`)."""
    if not _state.is_loaded():
        return _real_backend()(gm, example_inputs, mode=mode, options=options, **kwargs)
    if not torch._dynamo.config.assume_static_by_default:
        raise NeuronCompileError(
            "neuron (emulated): torch.compile(backend='neuron') does not support dynamic=True "
            "(dynamic shapes): use dynamic=False and pad or bucket input shapes")
    if mode not in (None, "default"):
        _warn_once(f"mode={mode}", f"neuron (emulated): torch.compile mode={mode!r} has no "
                   "effect on the neuron backend (only mode='default' does)")
    ignored = sorted(set(options or ()) - {"fallback_execution"})
    if ignored:
        _warn_once(f"options={ignored}", f"neuron (emulated): torch.compile options {ignored} "
                   "are ignored by the neuron backend (it reads fallback_execution)")
    cpu = [i for i, t in enumerate(example_inputs)
           if isinstance(t, torch.Tensor) and t.device.type == "cpu"]
    if cpu and env_flag(AUTOCOPY_ENV, False):
        raise NeuronCompileError(
            f"neuron (emulated): input {cpu[0]} of the compiled graph is a CPU tensor and "
            f"{AUTOCOPY_ENV}=1 turns off copying CPU inputs to the device: move the inputs "
            "(and the model) to the neuron device, or unset it")
    if cpu:  # traced as device inputs; copied to the device at run time
        example_inputs = _on_device(example_inputs, cpu)
    with _fallback.quiet():
        compiled = _aot(fallback_allowed(options))(gm, example_inputs)
    _count(compilations=1, graphs=1, recompilations=int(_frame_recompile()))
    return _per_shape(_autocopy(compiled, cpu) if cpu else compiled)


AUTOCOPY_ENV = "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY"


def _on_device(inputs, cpu: list[int]) -> list:
    from neuron_emulator import _devices
    from neuron_emulator._tensor import NeuronTensor

    index = _devices.current()
    return [NeuronTensor(t, index) if i in cpu else t for i, t in enumerate(inputs)]


def _autocopy(compiled, cpu: list[int]):
    """CPU inputs of a compiled graph are copied to the device and its outputs stay there, as
    the env-vars page says (TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 refuses them instead)."""
    cpu_set = frozenset(cpu)

    def run(*args):
        from neuron_emulator import _devices

        device = torch.device("neuron", _devices.current())
        return compiled(*[a.to(device) if i in cpu_set and isinstance(a, torch.Tensor)
                          and a.device.type == "cpu" else a for i, a in enumerate(args)])
    return run


def _real_backend():
    """The emulator did not load (a real torch-neuronx is there): use its `neuron` backend."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="torch_dynamo_backends"):
        if ep.name == "neuron" and ep.value.split(":")[0] != __name__:
            return ep.load()
    raise NeuronCompileError("neuron-emulator is not loaded and no other 'neuron' dynamo "
                             "backend is installed")


def register() -> None:
    """Register "neuron" with dynamo directly (the entry point does it for installed wheels)."""
    from torch._dynamo.backends import registry

    if "neuron" not in registry._BACKENDS:
        registry.register_backend(neuron_backend, name="neuron")
