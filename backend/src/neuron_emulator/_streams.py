"""torch.neuron.Stream / Event: synchronous, since every emulated op is.

A stream is an ordering handle only (waits return at once); an event records the host clock, so
`start.elapsed_time(end)` is the milliseconds between the two records, as measured on the host.
"""

from __future__ import annotations

import threading
import time

import torch

from neuron_emulator import _devices


class Stream:
    """A (synchronous) stream of an emulated device."""

    def __init__(self, device=None, priority: int = 0, **kwargs) -> None:
        self.device_index = _devices.index_of(device)
        self.device = torch.device("neuron", self.device_index)
        self.device_type = "neuron"
        self.priority = priority
        self.stream_id = id(self)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Every emulated op is synchronous."""

    def wait_event(self, event) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return self.stream_id

    def __repr__(self) -> str:
        return f"<torch.neuron.Stream device=neuron:{self.device_index} (emulated, synchronous)>"


class Event:
    """A (synchronous) event; elapsed_time() in milliseconds between two records."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, **kwargs) -> None:
        self.enable_timing = enable_timing
        self._t: float | None = None

    def record(self, stream=None) -> None:
        self._t = time.perf_counter()

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


_local = threading.local()
_default: dict[int, Stream] = {}


def default_stream(device=None) -> Stream:
    idx = _devices.index_of(device)
    s = _default.get(idx)
    if s is None:
        s = _default[idx] = Stream(idx)
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
