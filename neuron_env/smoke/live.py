"""Which step an inside/ script (smoke, trial) is running, said on stderr as it happens: a line
when each step starts, and a heartbeat while one runs long (on Neuron the first call compiles
for minutes). Fed live from the funnel (`proc.Running.watch`) while the runner collects."""

from __future__ import annotations

import sys

from neuron_env.target_python.protocol import STEP
from neuron_env.util.progress import Heartbeat, Progress


def steps_in(text: str) -> list[str]:
    """The step names announced in `text` (whole stderr lines), in order."""
    return STEP.findall(text)


def watched(fmt: str) -> bool:
    """Step lines for text output, or whenever a person watches stderr; never otherwise (a
    pipeline reading --format json keeps a quiet stderr)."""
    return fmt == "text" or sys.stderr.isatty()


def for_format(fmt: str, what: str) -> StepLines | None:
    return StepLines(what) if watched(fmt) else None


class StepLines:
    """`[  1.2s] smoke: matmul` when a step starts; `  ... still in matmul (20s)` every
    HEARTBEAT seconds while it runs. Feed it stderr chunks (`feed`) and clock ticks (`tick`)."""

    def __init__(self, what: str, progress: Progress | None = None) -> None:
        self.what, self.progress = what, progress or Progress()
        self.pending, self.since = b"", 0.0
        self.step: str | None = None
        self.beat = Heartbeat()

    def follow(self, running) -> None:
        """Watch a started child (proc.Running) while its runner collects it."""
        running.watch(self.feed, self.tick)

    def feed(self, data: bytes) -> None:
        head, _, self.pending = (self.pending + data).rpartition(b"\n")
        for name in steps_in(head.decode("utf-8", "replace")):
            self.start(name)

    def start(self, name: str) -> None:
        self.step, self.since = name, self.progress.elapsed()
        self.beat.restart(self.since)
        self.progress.say(f"{self.what}: {name}")

    def tick(self, _elapsed: float | None = None) -> None:
        now = self.progress.elapsed()
        if self.step is not None and self.beat.due(now):
            self.progress.say(f"  ... still in {self.step} ({now - self.since:.0f}s)")
