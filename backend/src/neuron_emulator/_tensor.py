"""The device tensor: a wrapper subclass whose aten ops run on the CPU tensor it holds."""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_map

from neuron_emulator import _fallback, _faults

aten = torch.ops.aten
DEVICE = torch.device("neuron", 0)  # valid once the backend is renamed to "neuron"
_META = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)


class NeuronTensor(torch.Tensor):
    """A tensor on the emulated `neuron` device; its data is the CPU tensor `_elem`."""

    _elem: torch.Tensor
    __slots__ = ("_elem",)

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        r = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
            dtype=elem.dtype, layout=elem.layout, device=DEVICE, requires_grad=False,
        )
        r._elem = elem
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __repr__(self, *, tensor_contents=None) -> str:
        body = repr(self._elem.detach())
        inner = body[len("tensor("):-1] if body.startswith("tensor(") else body
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({inner}, device='neuron:0'{grad})"

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return format(self.item(), spec)
        return repr(self)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return dispatch(func, args, kwargs or {})


def unwrap(x):
    return x._elem if isinstance(x, NeuronTensor) else x


def _device_of(kwargs) -> torch.device | None:
    d = kwargs.get("device")
    return torch.device(d) if d is not None else None


def _check_devices(args, kwargs) -> None:
    """Like a real device: a CPU tensor (other than a 0-dim scalar) in a neuron op is an error."""
    for x in _tensors((args, kwargs)):
        if not isinstance(x, NeuronTensor) and x.device.type != "meta" and x.dim() > 0:
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               f"least two devices, neuron:0 and {x.device}!")


def _tensors(tree):
    out = []
    tree_map(lambda x: out.append(x) if isinstance(x, torch.Tensor) else None, tree)
    return out


def _to_copy(func, args, kwargs):
    src = args[0]
    dev = _device_of(kwargs)
    kw = {k: v for k, v in kwargs.items() if k != "device"}
    out = aten._to_copy.default(unwrap(src), **kw)
    return out if dev is not None and dev.type != "neuron" else NeuronTensor(out)


def _copy(func, args, kwargs):
    dst, src = args[0], args[1]
    if isinstance(dst, NeuronTensor):
        dst._elem.copy_(unwrap(src), *args[2:], **kwargs)
        return dst
    return dst.copy_(unwrap(src), *args[2:], **kwargs)  # neuron -> cpu


_SPECIAL = {aten._to_copy.default: _to_copy, aten.copy_.default: _copy}


def dispatch(func, args, kwargs):
    _faults.before(func)
    _fallback.note(func)
    if func in _SPECIAL:  # the only ops allowed to cross devices
        return _SPECIAL[func](func, args, kwargs)
    _check_devices(args, kwargs)
    if "device" in kwargs:
        kwargs = dict(kwargs, device="cpu")
    inputs = {id(t._elem): t for t in _tensors((args, kwargs)) if isinstance(t, NeuronTensor)}
    out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
    out = _faults.after(func, out)
    return tree_map(lambda x: _rewrap(x, inputs), out)


def _rewrap(x, inputs):
    if not isinstance(x, torch.Tensor) or isinstance(x, NeuronTensor):
        return x
    same = inputs.get(id(x))
    if same is not None:  # in-place or out=: hand back the caller's tensor, metadata synced
        resync(same)
        return same
    return NeuronTensor(x) if x.device.type == "cpu" else x


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
    (torch.randn(..., device="neuron"), the empty tensor behind .to("neuron"))."""
    _fallback.note(op)
    if op.overloadpacket.__name__ in ("empty", "empty_strided") and args:
        _faults.check_allocation(args[0], kwargs.get("dtype"))
    if "device" in kwargs:
        kwargs = dict(kwargs, device="cpu")
    out = op(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
    return tree_map(lambda x: NeuronTensor(x) if isinstance(x, torch.Tensor) and
                    not isinstance(x, NeuronTensor) and x.device.type == "cpu" else x, out)


def copy_from(src, dst, non_blocking=False):
    """aten::_copy_from for PrivateUse1: torch.tensor(..., device="neuron") lands here."""
    if isinstance(dst, NeuronTensor):
        dst._elem.copy_(unwrap(src))
    else:
        dst.copy_(unwrap(src))
    return dst
