"""Progress lines on stderr (never stdout: JSON lives there), shared by install, smoke and
trial: `[  12.3s] message` lines, and the heartbeat schedule for long quiet stretches."""

from __future__ import annotations

import os
import sys
import time

from neuron_env.guards import redact

HEARTBEAT = 10.0  # seconds between "... still ..." lines while nothing else is said


class Progress:
    """Plain progress lines with the elapsed time since the run began (time spent waiting for
    the user at a prompt is taken out: see `pause`)."""

    def __init__(self, quiet: bool = False, stream=None) -> None:
        self.t0 = time.monotonic()
        self.quiet, self.stream = quiet, stream or sys.stderr

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, msg: str) -> None:
        if not self.quiet:
            self.stream.write(redact.text(f"[{self.elapsed():6.1f}s] {msg}\n"))
            self.stream.flush()

    def pause(self, seconds: float) -> None:
        """Leave `seconds` (spent at a prompt) out of the elapsed time from now on."""
        self.t0 += seconds

    @property
    def tty(self) -> bool:
        """A terminal that can redraw a line in place (not `TERM=dumb`): live bars go there."""
        try:
            is_tty = self.stream.isatty()
        except (AttributeError, ValueError, OSError):
            return False
        return bool(is_tty) and not self.quiet and os.environ.get("TERM") != "dumb"


class Heartbeat:
    """When to say "still busy": every `every` seconds of a stretch (`restart` begins one)."""

    def __init__(self, every: float = HEARTBEAT, start: float = 0.0) -> None:
        self.every, self.next = every, start + every

    def restart(self, at: float) -> None:
        self.next = at + self.every

    def due(self, now: float) -> bool:
        """True (once per period) when `now` has reached the next beat."""
        if now < self.next:
            return False
        self.next = now + self.every
        return True
