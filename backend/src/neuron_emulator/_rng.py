"""Random numbers on the emulated devices: one generator per device, as on a real accelerator.

Random ops on `neuron:i` draw from device i's generator (a CPU generator underneath), so
`torch.neuron.manual_seed(s)` (or `torch.manual_seed(s)`, which seeds every device) makes
`torch.randn(..., device="neuron")` deterministic. `torch.Generator(device="neuron")` gives a
generator of the emulated device.
"""

from __future__ import annotations

import torch

from neuron_emulator import _devices

aten = torch.ops.aten
_gens: dict[int, torch._C.Generator] = {}
_plan: dict = {}  # OpOverload -> None | "kwarg" | an overload that takes a generator
#                   | ("host", fn): a device kernel the CPU lacks (_kernels.HOST)
_SIBLING = {"default": "generator", "low": "low_generator", "names": "generator_with_names"}


def generator(index: int) -> torch._C.Generator:
    g = _gens.get(index)
    if g is None:
        g = _gens[index] = torch._C.Generator()
        g.manual_seed(torch.initial_seed())  # like CUDA: seeded from the default seed
    return g


_RANDOM_FACTORIES = ("randn", "rand", "randint", "randperm")
_UNSET = object()
_DROPOUT = aten.native_dropout.default


def _plan_for(func):
    from neuron_emulator import _kernels

    host = _kernels.HOST.get(func)
    if host is not None:
        return ("host", host)
    if any(a.name == "generator" for a in func._schema.arguments):
        return "kwarg"
    if func.overloadpacket.__name__ in _RANDOM_FACTORIES:
        sibling = _SIBLING.get(func._overloadname)
        return getattr(func.overloadpacket, sibling, None) if sibling else None
    return None


def call(func, args, kwargs, index: int):
    """Run `func` on host tensors; a random op draws from device `index`'s generator."""
    plan = _plan.get(id(func), _UNSET)  # by id: OpOverload's own hash is Python code
    if plan is _UNSET:
        plan = _plan[id(func)] = _plan_for(func)
    if plan is None:
        if func is _DROPOUT and (args[2] if len(args) > 2 else kwargs.get("train")) is not False:
            return _dropout(args[0], args[1], index)
        return func(*args, **kwargs)
    if plan.__class__ is tuple:  # a device kernel the CPU lacks (_kernels)
        return plan[1](*args, **kwargs)
    if kwargs.get("generator") is None:
        kwargs = dict(kwargs, generator=generator(index))
    return (func if plan == "kwarg" else plan)(*args, **kwargs)


def plain(func) -> bool:
    """call() would only call `func` itself: no generator, no device kernel, not dropout."""
    plan = _plan.get(id(func), _UNSET)
    if plan is _UNSET:
        plan = _plan[id(func)] = _plan_for(func)
    return plan is None and func is not _DROPOUT


def _dropout(x, p, index):
    mask = torch.empty_like(x, dtype=torch.bool).bernoulli_(1 - p, generator=generator(index))
    scale = 0.0 if p >= 1 else 1.0 / (1 - p)
    return x * mask * scale, mask


# --- torch.neuron's RNG functions -------------------------------------------------------------

def manual_seed(seed: int) -> None:
    generator(_devices.current()).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(_devices.COUNT):
        generator(i).manual_seed(int(seed))


def seed() -> None:
    generator(_devices.current()).seed()


def seed_all() -> None:
    s = generator(_devices.current()).seed()
    manual_seed_all(s)


def initial_seed() -> int:
    return generator(_devices.current()).initial_seed()


def get_rng_state(device="neuron") -> torch.Tensor:
    return generator(_devices.index_of(device)).get_state()


def set_rng_state(state: torch.Tensor, device="neuron") -> None:
    generator(_devices.index_of(device)).set_state(state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [generator(i).get_state() for i in range(_devices.COUNT)]


def set_rng_state_all(states) -> None:
    for i, s in enumerate(states):
        generator(i).set_state(s)


# --- torch.Generator(device="neuron") ---------------------------------------------------------

_Base = torch._C.Generator


class _GeneratorMeta(type(_Base)):
    """Keeps `isinstance(g, torch.Generator)` true for every generator, as before."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _Base)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, _Base)


class Generator(_Base, metaclass=_GeneratorMeta):
    """torch.Generator: a neuron device generator for device="neuron[:i]", else torch's own."""

    def __new__(cls, device="cpu"):
        d = torch.device(device)
        if d.type != "neuron":
            return _Base(device)
        g = _Base.__new__(cls, "cpu")
        g._neuron_index = _devices.index_of(d)
        return g

    @property
    def device(self) -> torch.device:
        return torch.device("neuron", self._neuron_index)


def install() -> None:
    torch.Generator = Generator
