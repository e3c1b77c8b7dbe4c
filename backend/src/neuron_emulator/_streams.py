"""torch.neuron.Stream / Event: synchronous, since every emulated op is.

A stream is an ordering handle only (waits return at once); an event records the host clock, so
`start.elapsed_time(end)` is the milliseconds between the two records, as measured on the host.
"""

from __future__ import annotations

import itertools
import threading
import time

import torch

from neuron_emulator import _devices

_PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1
_ids = itertools.count(1)  # stream and event ids; 0 is the default stream / an unrecorded event


class Stream(torch.Stream):
    """A (synchronous) stream of an emulated device; a real torch.Stream (device `neuron:i`)."""

    def __new__(cls, device=None, priority: int = 0, *, _stream_id: int | None = None,
                **kwargs):
        index = _devices.index_of(device)
        self = super().__new__(cls, stream_id=next(_ids) if _stream_id is None else _stream_id,
                               device_index=index, device_type=_PRIVATEUSE1)
        self.priority = priority
        return self

    def __init__(self, *args, **kwargs) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Every emulated op is synchronous."""

    def wait_event(self, event) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self, event=None):
        event = event if event is not None else Event(self.device)
        event.record(self)
        return event

    def __enter__(self):
        """`with torch.Stream(device="neuron:i") as s:` as PyTorch's Stream.__enter__: the
        stream's device becomes the current device and `s` its current stream until the block
        ends (torch's own __enter__ leaves a device with no C++ guard as it is)."""
        stack = self.__dict__.setdefault("_ctx", [])
        stack.append((_devices.current(), current_stream(self.device_index)))
        _devices.set_current(self.device_index)
        set_stream(self)
        return self

    def __exit__(self, *exc) -> bool:
        device, prev = self.__dict__["_ctx"].pop()
        set_stream(prev)
        _devices.set_current(device)
        return False

    def __repr__(self) -> str:
        return (f"<torch.neuron.Stream device=neuron:{self.device_index} "
                f"stream_id={self.stream_id} (emulated, synchronous)>")


class Event(torch.Event):
    """A (synchronous) event, a real torch.Event; elapsed_time() in milliseconds between two
    records, measured on the host."""

    def __new__(cls, device=None, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False, **kwargs):
        if isinstance(device, bool):  # torch.neuron.Event(True): enable_timing first, as CUDA's
            device, enable_timing = None, device
        self = super().__new__(cls, device="cpu", enable_timing=enable_timing)
        self._index = _devices.index_of(device)
        self.enable_timing = enable_timing
        self._t: float | None = None
        self._id = 0
        return self

    def __init__(self, *args, **kwargs) -> None:
        pass

    @property
    def device(self) -> torch.device:
        return torch.device("neuron", self._index)

    @property
    def event_id(self) -> int:
        return self._id

    def record(self, stream=None) -> None:
        if isinstance(stream, Stream):
            self._index = stream.device_index
        self._t = time.perf_counter()
        self._id = next(_ids)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("neuron (emulated): both events need enable_timing=True")
        if self._t is None or end_event._t is None:
            raise RuntimeError("neuron (emulated): both events must be recorded before "
                               "elapsed_time()")
        return (end_event._t - self._t) * 1000.0

    def __repr__(self) -> str:
        return (f"<torch.neuron.Event device=neuron:{self._index} event_id={self._id} "
                "(emulated, synchronous)>")


_local = threading.local()
_default: dict[int, Stream] = {}


def default_stream(device=None) -> Stream:
    idx = _devices.index_of(device)
    s = _default.get(idx)
    if s is None:
        s = _default[idx] = Stream(idx, _stream_id=0)
    return s


def current_stream(device=None) -> Stream:
    idx = _devices.index_of(device)
    cur = getattr(_local, "streams", {}).get(idx)
    return cur if cur is not None else default_stream(idx)


def set_stream(stream: Stream) -> None:
    if not hasattr(_local, "streams"):
        _local.streams = {}
    _local.streams[stream.device_index] = stream


class stream:
    """`with torch.neuron.stream(s):` makes `s` the current stream of its device."""

    def __init__(self, s: Stream | None) -> None:
        self.s = s
        self.prev: Stream | None = None

    def __enter__(self):
        if self.s is not None:
            self.prev = current_stream(self.s.device_index)
            set_stream(self.s)
        return self.s

    def __exit__(self, *exc) -> bool:
        if self.prev is not None:
            set_stream(self.prev)
        return False


# --- torch.Stream / torch.Event(device="neuron:i") ----------------------------------------------

_BaseStream, _BaseEvent = torch.Stream, torch.Event


def _is_neuron(device) -> bool:
    if device is None or isinstance(device, int):
        return False
    try:
        return torch.device(device).type == "neuron"
    except (RuntimeError, TypeError):
        return False


class _Meta(type(_BaseStream)):
    """Keeps isinstance/issubclass against torch.Stream / torch.Event as before."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls._base)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, cls._base)


class TorchStream(_BaseStream, metaclass=_Meta):
    """torch.Stream: an emulated neuron stream for device="neuron[:i]", else torch's own."""

    _base = _BaseStream

    def __new__(cls, *args, **kwargs):
        device = kwargs.get("device", args[0] if len(args) == 1 else None)
        if _is_neuron(device):
            return Stream(device, priority=kwargs.get("priority", 0))
        return _BaseStream(*args, **kwargs)


class TorchEvent(_BaseEvent, metaclass=_Meta):
    """torch.Event: an emulated neuron event for device="neuron[:i]", else torch's own."""

    _base = _BaseEvent

    def __new__(cls, *args, **kwargs):
        device = kwargs.get("device", args[0] if args else None)
        if _is_neuron(device):
            kw = {k: v for k, v in kwargs.items() if k != "device"}
            return Event(device, *args[1:], **kw)
        return _BaseEvent(*args, **kwargs)


def install() -> None:
    torch.Stream = TorchStream
    torch.Event = TorchEvent
