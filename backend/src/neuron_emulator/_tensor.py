"""The device tensor: a wrapper subclass whose aten ops run on the CPU tensor it holds.

Each NeuronTensor carries its device index (`neuron:0` … `neuron:N-1`); an op's result lands on
its inputs' device, a factory's on the `device=` it names (or the current device). Tensors of
two devices in one op are an error, as on a real accelerator.
"""

from __future__ import annotations

import weakref

import torch

from neuron_emulator import _devices, _fallback, _faults, _limits, _memory, _rng

aten = torch.ops.aten
Tensor = torch.Tensor
_META = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
_DEVICES = [torch.device("neuron", i) for i in range(_devices.COUNT)]
_host_storage: dict[int, weakref.ref] = {}  # device storage (_cdata) -> its host tensor


class NeuronTensor(torch.Tensor):
    """A tensor on an emulated `neuron` device; its data is the CPU tensor `_elem`."""

    _elem: torch.Tensor
    _dev: int

    @staticmethod
    def __new__(cls, elem: torch.Tensor, index: int = 0):
        return _wrap(elem, index, cls)

    __torch_function__ = torch._C._disabled_torch_function_impl

    # a traceable wrapper subclass: torch.compile / AOTAutograd trace through __torch_dispatch__
    def __tensor_flatten__(self):
        return ["_elem"], self._dev

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return NeuronTensor(inner["_elem"], ctx or 0)

    def __repr__(self, *, tensor_contents=None) -> str:
        body = repr(self._elem.detach())
        inner = body[len("tensor("):-1] if body.startswith("tensor(") else body
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({inner}, device='neuron:{self._dev}'{grad})"

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return format(self.item(), spec)
        return repr(self)

    def data_ptr(self) -> int:
        return self._elem.data_ptr()

    def tolist(self):
        """As on CUDA: the values, copied to the host (torch refuses tolist on subclasses)."""
        return self._elem.tolist()

    def untyped_storage(self):
        """The device tensor's (data-less) storage; remembered, so that `t.set_(storage)` can
        find the host data behind it."""
        st = super().untyped_storage()
        if len(_host_storage) > 4096:  # forget storages whose tensors are gone
            for k in [k for k, r in _host_storage.items() if r() is None]:
                del _host_storage[k]
        _host_storage[st._cdata] = weakref.ref(self._elem)
        return st

    def __reduce_ex__(self, protocol):
        """torch.save: as a backend without storage (torch's own path for those); torch.load
        brings it back to the device, or wherever map_location says."""
        return (torch._utils._rebuild_device_tensor_from_cpu_tensor,
                (self._elem.detach().clone(), self.dtype, str(self.device), self.requires_grad))

    # __torch_dispatch__ is dispatch() itself (set below): one Python frame less per op


_make_wrapper = torch.Tensor._make_wrapper_subclass


def _wrap(elem: torch.Tensor, index: int, cls: type = NeuronTensor) -> NeuronTensor:
    """NeuronTensor(elem, index) without the class call (dispatch makes one per op result)."""
    r = _make_wrapper(cls, elem.size(), strides=elem.stride(),
                      storage_offset=elem.storage_offset(), dtype=elem.dtype,
                      layout=elem.layout, device=_DEVICES[index], requires_grad=False)
    r._elem = elem
    r._dev = index
    _memory.track(elem, index)
    return r


def unwrap(x):
    return x._elem if isinstance(x, NeuronTensor) else x


def _index_of_kwarg(kwargs) -> int | None:
    d = kwargs.get("device")
    if d is None:
        return None
    d = torch.device(d)
    return _devices.index_of(d) if d.type == "neuron" else None


def _scan(args, kwargs):
    """One pass over an op's arguments: the op's device index and its device inputs by
    host-tensor id. A CPU tensor (other than a 0-dim scalar) among neuron inputs, or two neuron
    devices, is an error, as on a real device."""
    seen = [None, {}, False]  # device index, inputs, a traced device tensor seen
    for group in (args, kwargs.values()):
        for a in group:
            if isinstance(a, (list, tuple)):
                _scan_list(a, seen)
            elif isinstance(a, Tensor):
                _scan_one(a, seen)
    found = seen[0]
    return (_devices.current() if found is None else found), seen[1], seen[2]


# PyTorch's indexing rule (as on CUDA): the indices of index/index_put may live on the CPU or
# on the indexed tensor's device (x_cuda[cpu_long_tensor] works; PyTorch's own TensorIterator
# index kernels move them).
_INDEX_OPS = frozenset(getattr(getattr(aten, n), o)
                       for n in ("index", "index_put", "index_put_", "_index_put_impl_",
                                 "_unsafe_index", "_unsafe_index_put")
                       for o in getattr(aten, n).overloads())


def _scan_index(args, kwargs):
    """_scan for index/index_put: CPU index tensors (args[1]) are allowed beside device ones."""
    indices = [i for i in args[1] if not (isinstance(i, Tensor) and i.device.type == "cpu")]
    return _scan((args[0], indices, *args[2:]), kwargs)


def _scan_list(items, seen) -> None:
    for x in items:
        if isinstance(x, (list, tuple)):  # c10d ops take lists of lists
            _scan_list(x, seen)
        elif isinstance(x, Tensor):
            _scan_one(x, seen)


def _scan_one(x, seen) -> None:
    if isinstance(x, NeuronTensor):
        seen[1][id(x._elem)] = x
        if seen[0] is None:
            seen[0] = x._dev
        elif x._dev != seen[0]:
            _mixed(f"neuron:{seen[0]}", f"neuron:{x._dev}")
    elif x.device.type == "neuron":
        # a plain tensor on the device: a FakeTensor that a factory (torch.arange(...,
        # device=x.device)) made under torch.compile's fake mode, which intercepts factories
        # before the device key. Same device, whatever the spelling (neuron, neuron:0).
        index = _devices.current() if x.device.index is None else x.device.index
        if seen[0] is None:
            seen[0] = index
        elif index != seen[0]:
            _mixed(f"neuron:{seen[0]}", f"neuron:{index}")
        seen[2] = True
    elif x.dim() > 0 and x.device.type != "meta" and not _tracing_cpu(x):
        _mixed(f"neuron:{_devices.current() if seen[0] is None else seen[0]}", x.device)


def _tracing_cpu(x) -> bool:
    """A CPU fake tensor beside device tensors while torch.compile traces: a CPU input of a
    compiled graph, which the neuron backend copies to the device at run time (_compile)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(x, FakeTensor)


def _unwrap_all(seq):
    return [x._elem if isinstance(x, NeuronTensor) else
            _unwrap_all(x) if isinstance(x, (list, tuple)) else x for x in seq]


_CPU = torch.device("cpu")
_F64 = torch.float64


def _host(x):
    if isinstance(x, NeuronTensor):
        return x._elem
    if isinstance(x, Tensor) and x.device.type == "neuron":
        return aten._to_copy.default(x, device=_CPU)
    if isinstance(x, (list, tuple)):
        return _host_all(x)
    return x


def _host_all(seq):
    return [_host(x) for x in seq]


def _rewrap_all(out, inputs, index, resized):
    if isinstance(out, Tensor):
        return _rewrap(out, inputs, index, resized)
    if isinstance(out, (tuple, list)):
        return type(out)(_rewrap_all(x, inputs, index, resized) for x in out)
    return out


def _mixed(a, b):
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                       f"devices, {a} and {b}!")


def _to_copy(func, args, kwargs):
    src = args[0]
    _limits.check_layout(src)
    dst = _index_of_kwarg(kwargs)
    kw = {k: v for k, v in kwargs.items() if k != "device"}
    out = aten._to_copy.default(unwrap(src), **kw)
    d = kwargs.get("device")
    if d is not None and torch.device(d).type != "neuron":
        return out
    return NeuronTensor(_limits.as_device_dtype(out), src._dev if dst is None and
                        isinstance(src, NeuronTensor) else
                        _devices.current() if dst is None else dst)


def _copy(func, args, kwargs):
    dst, src = args[0], args[1]
    if isinstance(dst, NeuronTensor):
        dst._elem.copy_(unwrap(src), *args[2:], **kwargs)
        _limits.round_float64(dst._elem)
        return dst
    return dst.copy_(unwrap(src), *args[2:], **kwargs)  # neuron -> cpu


def _record_stream(func, args, kwargs):
    return None  # every emulated op is synchronous: nothing to keep alive


_SPECIAL = {aten._to_copy.default: _to_copy, aten.copy_.default: _copy,
            aten.record_stream.default: _record_stream}
_RESIZER_OPS = frozenset(getattr(getattr(aten, n), o) for n in ("resize_", "set_", "resize_as_")
                         for o in getattr(aten, n).overloads())


_SET_STORAGE = frozenset({aten.set_.source_Storage, aten.set_.source_Storage_storage_offset})


def _host_storage_of(storage):
    """t.set_(storage): a device tensor's storage stands for its host data."""
    if isinstance(storage, torch.UntypedStorage) and storage.device.type == "neuron":
        ref = _host_storage.get(storage._cdata)
        elem = ref() if ref is not None else None
        if elem is None:
            raise RuntimeError("neuron (emulated): set_() with a device storage whose tensor "
                               "is gone")
        return elem.untyped_storage()
    return storage


# in-place ops that change a tensor's sizes/strides (the wrapper must follow its data)
_METADATA_INPLACE = frozenset({"t_", "transpose_", "squeeze_", "unsqueeze_", "as_strided_",
                               "swapdims_", "swapaxes_", "resize_", "resize_as_", "set_",
                               "_resize_output_", "unsafe_set_"})
_PLANS: dict[int, tuple] = {}  # id(OpOverload) -> its plan: one lookup per op, no hashing


def _make_plan(func) -> tuple:
    """What dispatch needs to know of an op, worked out once: (special kernel, fallback-note
    entry, unsupported kind, resync mode, set_ from a storage, fault hooks, argument scan)."""
    name = func.overloadpacket.__name__
    writes_kwarg = any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write
                       for a in func._schema.arguments)  # out=: may be resized
    resized = func in _RESIZER_OPS
    resync_mode = 2 if resized else 1 if (writes_kwarg or name in _METADATA_INPLACE
                                          or "resize" in name) else 0
    special, kind, set_storage, faults = (_SPECIAL.get(func), _limits._kind(func),
                                          func in _SET_STORAGE, bool(_faults._active))
    # the common op: no special kernel, supported, no storage argument, no fault hooks, not an
    # index op, nothing random (_rng.call would only call it): dispatch's fast path calls its
    # C++ op directly
    direct = func._op if (special is None and kind is None and not set_storage and not faults
                          and func not in _INDEX_OPS and _rng.plain(func)) else None
    plan = (special, _fallback.entry(func), kind, resync_mode, set_storage, faults,
            _scan_index if func in _INDEX_OPS else _scan, direct)
    _PLANS[id(func)] = plan
    return plan


def _fast_scan(args) -> tuple | None:
    """The common case in one pass: positional arguments of device tensors (one device) and
    non-tensors (numbers, lists of numbers). (index, inputs by host-tensor id, host args), or
    None when anything else is there (a CPU tensor, a list of tensors, no device tensor): the
    general path (_scan) then decides, its errors included."""
    index = None
    inputs = {}
    host = []
    for a in args:
        if a.__class__ is NeuronTensor:
            e = a._elem
            if index is None:
                index = a._dev
            elif a._dev != index:
                return None
            inputs[id(e)] = a
            host.append(e)
        elif isinstance(a, Tensor):
            return None
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, (Tensor, list, tuple)):
                    return None
            host.append(a)
        else:
            host.append(a)
    if index is None:
        return None
    return index, inputs, host


def _plain_kwargs(kwargs: dict) -> bool:
    """Keyword arguments the fast path passes as they are: no tensor, no list, no device
    (addcdiv_'s value=, clone's memory_format=)."""
    return "device" not in kwargs and not any(
        isinstance(v, (Tensor, list, tuple)) for v in kwargs.values())


def dispatch(cls, func, types, args=(), kwargs=None):
    """NeuronTensor.__torch_dispatch__: run `func` on the host tensors, wrap its results."""
    plan = _PLANS.get(id(func))
    if plan is None:
        plan = _make_plan(func)
    special, entry, kind, resync_mode, set_storage, faults, scan, direct = plan
    if kwargs is None:
        kwargs = {}
    if direct is not None and (not kwargs or _plain_kwargs(kwargs)):
        fast = _fast_scan(args)
        if fast is not None:  # the steps below, less those that cannot apply to this op
            _fallback.count(entry)
            index, inputs, host_args = fast
            out = direct(*host_args, **kwargs)
            if type(out) is Tensor:
                same = inputs.get(id(out))
                if same is None:  # one fresh result (is_cpu: no torch.device made)
                    if not out.is_cpu:
                        return out
                    return _wrap(out if out.dtype is not _F64 else _limits.as_device_dtype(out),
                                 index)
                if not resync_mode:  # in place (add_, mul_): the caller's tensor
                    return same
            return _rewrap_all(out, inputs, index, resync_mode)
    if faults:
        _faults.before(func)
    _fallback.count(entry)
    if special is not None:  # the only ops allowed to cross devices
        return special(func, args, kwargs)
    if kind is not None:
        _limits._unsupported(kind)
    index, inputs, traced = scan(args, kwargs)
    unwrap_all = _host_all if traced else _unwrap_all
    if kwargs:
        kwargs = dict(zip(kwargs, unwrap_all(kwargs.values()), strict=True))
        if "device" in kwargs:
            kwargs["device"] = "cpu"
    host_args = unwrap_all(args)
    if set_storage:
        host_args[1] = _host_storage_of(host_args[1])
    out = _rng.call(func, host_args, kwargs, index)
    if faults:
        out = _faults.after(func, out)
    if type(out) is Tensor:  # the common case: one fresh result
        same = inputs.get(id(out))
        if same is None:
            return _wrap(_limits.as_device_dtype(out), index) \
                if out.device.type == "cpu" else out
    return _rewrap_all(out, inputs, index, resync_mode)


NeuronTensor.__torch_dispatch__ = classmethod(dispatch)  # type: ignore[assignment]


def _rewrap(x, inputs, index, resync_mode=1):
    if isinstance(x, NeuronTensor):
        return x
    same = inputs.get(id(x))
    if same is not None:  # in-place or out=: hand back the caller's tensor, metadata synced
        if resync_mode:
            resync(same)
            if resync_mode == 2:
                _memory.retrack(same)
        return same
    if x.device.type != "cpu":
        return x
    return _wrap(_limits.as_device_dtype(x), index)


def resync(t: NeuronTensor) -> None:
    """After resize_, set_, t_ or out= the wrapper's sizes/strides must follow its data."""
    e = t._elem
    if t.shape == e.shape and t.stride() == e.stride() and \
            t.storage_offset() == e.storage_offset():
        return
    aten.set_.source_Storage_storage_offset.redispatch(
        _META, t, t.untyped_storage(), e.storage_offset(), e.shape, e.stride())


def factory(op, *args, **kwargs):
    """PrivateUse1 boxed fallback: ops that reach the device key without a device tensor
    (torch.randn(..., device="neuron:1"), the empty tensor behind .to("neuron"))."""
    _fallback.note(op)
    _limits.check_op(op)
    index = _index_of_kwarg(kwargs)
    index = _devices.current() if index is None else index
    if op.overloadpacket.__name__ in ("empty", "empty_strided") and args:
        _memory.check_allocation(args[0], kwargs.get("dtype"), index)
    if "device" in kwargs:
        kwargs = dict(kwargs, device="cpu")
    kwargs = dict(zip(kwargs, _unwrap_all(kwargs.values()), strict=True))
    out = _rng.call(op, _unwrap_all(args), kwargs, index)
    return _rewrap_all(out, {}, index, 0)


FACTORY_KERNELS = ("empty.memory_format", "empty_strided")


def factory_kernel(name: str):
    packet, _, overload = name.partition(".")
    op = getattr(getattr(aten, packet), overload or "default")

    def kernel(*args, **kwargs):
        return factory(op, *args, **kwargs)
    return kernel


def copy_from(src, dst, non_blocking=False):
    """aten::_copy_from for PrivateUse1: torch.tensor(..., device="neuron") lands here."""
    if isinstance(dst, NeuronTensor):
        dst._elem.copy_(unwrap(src))
        _limits.round_float64(dst._elem)
    else:
        dst.copy_(unwrap(src))
    return dst


def _keep_on_host(storage, location: str):
    """torch.load: a storage tagged `neuron[:i]` stays in host memory (a Python backend has no
    device allocator to move it to); the tensor around it is rebuilt on the device."""
    return storage if location.startswith("neuron") else None


def install_fake_constant_guard() -> None:
    """torch.compile: `torch.tensor(3).to(x.device)` inside compiled code. Fake-tensor mode
    folds an op on constants by running it for real; run for real, a move to the device makes a
    NeuronTensor, which fake mode cannot hold as a constant ("fake_tensor must be a FakeTensor
    with a constant"). A device result is therefore never a constant: the op is traced like any
    other (as for a C++ backend, whose device tensors are plain tensors of that device)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    original = FakeTensorMode.may_turn_const

    def may_turn_const(self, t) -> bool:
        return not isinstance(t, NeuronTensor) and original(self, t)
    FakeTensorMode.may_turn_const = may_turn_const


def install_foreach_types() -> None:
    """Optimizers and grad clipping take torch's `_foreach_*` kernels on the device, as on
    TorchNeuron. torch picks foreach for parameters of a foreach device (its list names the
    PrivateUse1 backend, i.e. `neuron`) whose type is exactly Tensor or Parameter: real device
    parameters are plain tensors, the emulator's are NeuronTensor, so without this AdamW, SGD
    and clip_grad_norm_ would run their per-tensor loops here and foreach on the device."""
    import torch.optim.optimizer as optimizer
    import torch.utils._foreach_utils as foreach_utils

    for types in (getattr(optimizer, "_foreach_supported_types", None),
                  getattr(foreach_utils, "_foreach_supported_types", None)):
        if isinstance(types, list) and NeuronTensor not in types:
            types.append(NeuronTensor)


def register_serialization() -> None:
    torch.serialization.register_package(5, lambda obj: None, _keep_on_host)
