"""`@record`: cheap immutable value classes for the doctor path.

A frozen dataclass costs about 1.5 ms to create at import (it generates and compiles code);
neuron-env defines ~30 of them on doctor's path. `@record` reads the same annotated class body
and builds a slotted class whose plain, shared `__init__` sets the fields: creation costs
microseconds. What it keeps of dataclasses: positional/keyword construction, defaults,
`factory(...)` for mutable defaults, `__post_init__`, equality, hashing, repr, immutability,
and `replace(obj, **changes)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

_set = object.__setattr__


class _Factory:
    """A default made fresh for each instance: `extra: dict = factory(dict)`."""

    __slots__ = ("make",)

    def __init__(self, make) -> None:
        self.make = make


def _init(self, *args: Any, **kw: Any) -> None:
    cls = type(self)
    names, defaults = cls._fields, cls._defaults
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, got {len(args)}")
    for i, name in enumerate(names):
        if i < len(args):
            value = args[i]
        elif name in kw:
            value = kw.pop(name)
        elif name in defaults:
            value = defaults[name]
            if type(value) is _Factory:
                value = value.make()
        else:
            raise TypeError(f"{cls.__name__}() missing argument {name!r}")
        _set(self, name, value)
    if kw:
        raise TypeError(f"{cls.__name__}() got unexpected arguments {sorted(kw)}")
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


def _frozen(self, name: str, value: Any = None) -> None:
    raise AttributeError(f"{type(self).__name__} is immutable (use record.replace)")


def _values(self) -> tuple:
    return tuple(getattr(self, n) for n in self._fields)


def _eq(self, other: Any) -> bool:
    if type(other) is not type(self):
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self) -> int:
    return hash((type(self).__name__, _values(self)))


def _repr(self) -> str:
    inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
    return f"{type(self).__name__}({inner})"


def _record(cls: type) -> type:
    ann = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (no inspect: slow)
    names = tuple(n for n, t in ann.items() if not str(t).startswith(("ClassVar", "typing.Cl")))
    ns = {k: v for k, v in cls.__dict__.items()
          if k not in names and k not in ("__dict__", "__weakref__")}
    ns.update(__slots__=names, _fields=names,
              _defaults={n: cls.__dict__[n] for n in names if n in cls.__dict__},
              __init__=_init, __setattr__=_frozen, __delattr__=_frozen, __eq__=_eq,
              __hash__=_hash, __repr__=_repr)
    return type(cls.__name__, cls.__bases__, ns)


def replace(obj: Any, **changes: Any) -> Any:
    """A copy of `obj` with some fields changed (dataclasses.replace for records; plain
    dataclasses are handed to dataclasses.replace)."""
    if not hasattr(type(obj), "_fields"):
        import dataclasses

        return dataclasses.replace(obj, **changes)
    values = {n: getattr(obj, n) for n in obj._fields}
    values.update(changes)
    return type(obj)(**values)


if TYPE_CHECKING:  # what a type checker sees: a frozen dataclass, `factory(f)` a value of f's
    from collections.abc import Callable
    from typing import TypeVar

    from typing_extensions import dataclass_transform

    _C = TypeVar("_C", bound=type)
    _V = TypeVar("_V")

    def factory(make: Callable[[], _V]) -> _V: ...

    @dataclass_transform(frozen_default=True, field_specifiers=())
    def record(cls: _C) -> _C: ...
else:
    factory, record = _Factory, _record


def fields(obj: Any) -> tuple[str, ...]:
    """A record's field names, in order."""
    names: tuple[str, ...] = type(obj)._fields
    return names
