"""Pure: what pip and uv print about their downloads -> bytes done, total and rate.

What they print into a pipe (captured samples: tests/fixtures/installer_output/):
- pip, every version: `  Downloading NAME-OR-URL (4.0 MB)` (decimal units; no size when the
  server gives none; `Resuming download URL (1.0 MB/4.0 MB)` from pip 25); files of 512 kB or
  less, and a cache hit, show no progress, and each download ends before pip logs anything else
  (pip fetches one file at a time);
- pip >= 24.1 with `--progress-bar raw`: `Progress CURRENT of TOTAL` lines (bytes, about four
  a second) for the file being downloaded;
- pip < 24.1 (its rich bar, into a pipe): one final line per file, `━━━ 4.0/4.0 MB 45.8 MB/s`;
- uv: `Downloading NAME (3.8MiB)` for large files (binary units, several at once) and
  ` Downloaded NAME` when each is done.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

UNITS = {"bytes": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SIZE = r"([\d.]+)\s*([A-Za-z]+)"
_START = re.compile(r"^\s*(Downloading|Resuming download)\s+(\S+)"
                    rf"(?:\s+\((?:{_SIZE}/)?{_SIZE}\))?\s*$")
_RAW = re.compile(r"^\s*Progress (\d+) of (\d+)\s*$")
_FINAL_BAR = re.compile(r"^\s*━[━╸╺\s]*[\d.]+/[\d.]+ \w+")
_UV_DONE = re.compile(r"^\s*Downloaded (\S+)\s*$")


def size_bytes(number: str, unit: str) -> int | None:
    """`4.0`, `MB` -> 4000000; None for a unit neither pip nor uv prints."""
    factor = UNITS.get(unit.lower())
    try:
        return int(float(number) * factor) if factor else None
    except ValueError:
        return None


def file_name(what: str) -> str:
    """pip < 24 prints the URL, pip >= 24 and uv the file or project name."""
    return what.rstrip("/").rsplit("/", 1)[-1].split("#", 1)[0]


def parse_line(line: str) -> tuple | None:
    """One output line -> an event, or None when the line says nothing about downloads:
    ("start", name, total|None, already), ("bytes", current, total), ("done", name|None),
    or ("other",) for any other non-blank line (pip: the file being fetched is complete)."""
    line = _ANSI.sub("", line).rsplit("\r", 1)[-1].rstrip()
    if not line.strip():
        return None
    m = _RAW.match(line)
    if m:
        return ("bytes", int(m.group(1)), int(m.group(2)))
    m = _START.match(line)
    if m:
        total = size_bytes(m.group(5), m.group(6)) if m.group(5) else None
        already = size_bytes(m.group(3), m.group(4)) if m.group(3) else 0
        return ("start", file_name(m.group(2)), total, already or 0)
    m = _UV_DONE.match(line)
    if m:
        return ("done", m.group(1))
    if _FINAL_BAR.match(line):
        return ("done", None)
    return ("other",)


@dataclass
class File:
    name: str
    total: int | None
    done: int = 0
    finished: bool = False


class Tally:
    """The downloads of one installer run. parallel=False (pip): one file at a time, and any
    other line ends it; parallel=True (uv): only ` Downloaded NAME` ends a file."""

    def __init__(self, parallel: bool = False) -> None:
        self.parallel = parallel
        self.files: list[File] = []
        self.current: File | None = None
        self.live = False  # byte counts arrive while files download (pip's raw lines)

    def feed(self, line: str) -> bool:
        """Apply one line; True when the figures changed."""
        ev = parse_line(line)
        if ev is None or (ev[0] == "other" and (self.parallel or self.current is None)):
            return False
        kind = ev[0]
        if kind == "start":
            self._finish_current()
            self.current = File(ev[1], ev[2], ev[3])
            self.files.append(self.current)
        elif kind == "bytes" and self.current is not None:
            self.live = True
            self.current.done = ev[1]
            self.current.total = ev[2] or self.current.total
        elif kind == "done":
            self._finish(ev[1])
        else:
            self._finish_current()
        return True

    def _finish_current(self) -> None:
        if self.current is not None and not self.parallel:
            self._close(self.current)
            self.current = None

    def _finish(self, name: str | None) -> None:
        if name is None or not self.parallel:
            self._finish_current()
            return
        for f in self.files:
            if not f.finished and f.name == name:
                self._close(f)
                return

    @staticmethod
    def _close(f: File) -> None:
        f.finished = True
        f.done = max(f.done, f.total or 0)

    @property
    def done(self) -> int:
        return sum(f.done for f in self.files)

    @property
    def total(self) -> int | None:
        """Bytes announced so far (None while a started file has no size)."""
        if any(f.total is None and not f.finished for f in self.files):
            return None
        return sum(f.total if f.total is not None else f.done for f in self.files)

    @property
    def active(self) -> list[str]:
        return [f.name for f in self.files if not f.finished]

    def fetching(self) -> str | None:
        """`NAME (SIZE)` of a file being fetched whose bytes the installer does not count as
        they arrive (pip < 24.1, uv), else None."""
        f = next((f for f in self.files if not f.finished), None)
        if f is None or self.live:
            return None
        return f"{f.name} ({human(f.total)})" if f.total is not None else f.name


class Rate:
    """Bytes per second over the last `window` seconds of (time, bytes done) samples."""

    def __init__(self, window: float = 5.0) -> None:
        self.window = window
        self.samples: deque[tuple[float, int]] = deque()

    def add(self, t: float, done: int) -> None:
        self.samples.append((t, done))
        while len(self.samples) > 2 and t - self.samples[1][0] >= self.window:
            self.samples.popleft()

    def per_second(self) -> float | None:
        if len(self.samples) < 2:
            return None
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else None


def human(n: float | None) -> str:
    """Bytes the way pip prints them (decimal units)."""
    if n is None:
        return "?"
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{int(n)} bytes"


def figures(tally: Tally, rate: float | None) -> str:
    """What heartbeat lines add: `45.0 MB of 180.0 MB downloaded (25%), 2.3 MB/s`, or while an
    installer that does not count bytes fetches a file: `fetching NAME (SIZE)`."""
    total, done = tally.total, tally.done
    got = (f"{human(done)} of {human(total)} downloaded ({100 * done / total:.0f}%)" if total
           else f"{human(done)} downloaded")
    now = tally.fetching()
    if now:
        return f"fetching {now}" + (f"; {got}" if done else "")
    return got + (f", {human(rate)}/s" if rate is not None and tally.live else "")
