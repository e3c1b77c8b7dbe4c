"""Run a command with stdin and stderr on a pseudo-terminal (what a person at a terminal
gives it) and stdout on a pipe (JSON stays parseable); optionally answer a prompt late."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from dataclasses import dataclass


@dataclass
class TerminalRun:
    terminal: str  # what was written to the terminal (stderr), control codes and all
    stdout: str
    wall: float  # seconds from start to exit
    returncode: int


def run(argv: list[str], *, env: dict, cwd=None, prompt: bytes | None = None,
        answer: bytes = b"y\n", answer_after: float = 0.0, timeout: float = 240) -> TerminalRun:
    """`prompt` seen on the terminal -> wait `answer_after` seconds -> type `answer`."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=slave, stderr=slave, stdout=subprocess.PIPE, env=env,
                         cwd=cwd)
    os.close(slave)
    got = {master: b"", p.stdout.fileno(): b""}
    fds, asked = list(got), None
    try:
        while fds and time.monotonic() - t0 < timeout:
            for fd in select.select(fds, [], [], 0.2)[0]:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # EIO: the terminal's other side is closed
                    data = b""
                got[fd] += data
                if not data:
                    fds.remove(fd)
            if prompt and asked is None and prompt in got[master]:
                asked = time.monotonic()
            if asked is not None and asked > 0 and time.monotonic() - asked >= answer_after:
                os.write(master, answer)
                asked = -1.0
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    return TerminalRun(got[master].decode("utf-8", "replace"),
                       got[p.stdout.fileno()].decode("utf-8", "replace"),
                       time.monotonic() - t0, rc)
