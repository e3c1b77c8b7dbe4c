"""THE subprocess funnel: every child process of neuron-env starts here.

Two modes over one engine (`_Child`):
- capture (`run`, `spawn`): stdout and stderr come back as text, each capped at MAX_OUTPUT
  (the tail is kept and a first line says how much was cut); `Running.watch` follows a spawned
  child's stderr live (inside/ scripts announce their steps there) while `result()` reads;
- stream (`stream`): stdout and stderr merged, every chunk handed to a sink (the install log)
  as it arrives, a `tick` callback about every TICK seconds (heartbeat lines); a capped tail
  comes back for error messages.

What every child gets:
- its own session and process group (`start_new_session`); on timeout, Ctrl-C or exit the
  whole group is SIGKILLed;
- a timeout that holds: pipes are read with a deadline (never an unbounded `communicate()`),
  and are closed when the deadline passes, so a double-forked grandchild that escaped the
  group and keeps stdout open cannot hold neuron-env past `timeout` (+ GRACE);
- Linux: `prctl(PR_SET_PDEATHSIG, SIGKILL)` in the child (_ctypes, in `preexec_fn`), so the
  child dies when neuron-env dies, even by SIGKILL. This reaches the direct child only; its
  own children are left to the process group kill (which a SIGKILLed parent cannot send).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable

MAX_OUTPUT = 4 * 1024 * 1024  # per stream, bytes kept (the tail)
GRACE = 1.0  # after the child exits: how long grandchildren may keep the pipes before we close
TICK = 0.2
_CHUNK = 65536


class Completed:
    """A finished (or never-started) child. `returncode` None: did not run or was killed."""

    __slots__ = (
        "argv",
        "elapsed",
        "error",
        "returncode",
        "stderr",
        "stdout",
        "timed_out",
        "truncated",
    )

    def __init__(self, argv: tuple[str, ...], returncode: int | None, stdout: str, stderr: str,
                 elapsed: float, timed_out: bool = False, error: str | None = None,
                 truncated: bool = False) -> None:
        self.argv, self.returncode, self.stdout, self.stderr = argv, returncode, stdout, stderr
        self.elapsed, self.timed_out, self.error = elapsed, timed_out, error
        self.truncated = truncated  # some output was cut (see MAX_OUTPUT)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.error is None

    def tail(self, n: int = 600) -> str:
        text = (self.stderr or self.stdout or "").strip()
        return text[-n:]

    def replace(self, **kw) -> Completed:
        d = {k: getattr(self, k) for k in self.__slots__}
        d.update(kw)
        return Completed(**d)


class _Tail:
    """A byte buffer that keeps the last `cap` bytes and counts what it dropped."""

    def __init__(self, cap: int) -> None:
        self.cap, self.buf, self.cut = cap, bytearray(), 0

    def add(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > 2 * self.cap:  # amortized: trim in big steps
            self.trim()

    def trim(self) -> None:
        extra = len(self.buf) - self.cap
        if extra > 0:
            del self.buf[:extra]
            self.cut += extra

    def text(self) -> str:
        self.trim()
        body = self.buf.decode("utf-8", "replace")
        return f"[neuron-env: {self.cut} bytes of output cut]\n{body}" if self.cut else body


def _pdeathsig() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGKILL) through _ctypes' own dlopen/dlsym/call_function: the
    ctypes package on top of them costs ~4 ms of CPU in every child. ctypes where they lack."""
    try:
        import _ctypes

        # dlopen(None): the program itself (typeshed allows only a path)
        handle = _ctypes.dlopen(None)  # type: ignore[arg-type]
        fn, call = _ctypes.dlsym(handle, "prctl"), _ctypes.call_function
    except (ImportError, AttributeError, OSError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
        return
    call(fn, (1, int(signal.SIGKILL), 0, 0, 0))


def _child_setup(parent: int) -> Callable[[], None] | None:
    """preexec_fn (Linux): PR_SET_PDEATHSIG = SIGKILL. ctypes is imported in the child (the
    single-threaded fork, just before exec), not in neuron-env: it costs ~8 ms of start-up."""
    if not sys.platform.startswith("linux"):
        return None

    def setup() -> None:  # runs in the child between fork and exec
        try:
            _pdeathsig()
        except BaseException:  # no prctl: the child just lacks the guard
            return
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
    return setup


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _popen(argv, *, env, cwd, input, merge: bool) -> tuple[subprocess.Popen | None, str | None]:
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge else subprocess.PIPE,
            env=env, cwd=cwd, start_new_session=True,
            preexec_fn=_child_setup(os.getpid())), None
    except FileNotFoundError:
        return None, "not found"
    except PermissionError:
        return None, "permission denied"
    except OSError as e:
        return None, e.strerror or str(e)


class _Child:
    """One started child and its pipes; `wait` reads them until EOF, exit + GRACE or deadline."""

    def __init__(self, argv, timeout, env, input, cwd, merge, sink=None, tick=None) -> None:
        self.argv, self.sink, self.tick, self.merge = tuple(argv), sink, tick, merge
        self.start = time.monotonic()
        self.deadline = self.start + timeout
        self.input = input.encode() if input is not None else None
        self.proc, self.error = _popen(argv, env=env, cwd=cwd, input=input, merge=merge)
        self.out, self.err = _Tail(MAX_OUTPUT), _Tail(MAX_OUTPUT)
        self.timed_out = False
        self.sel: selectors.BaseSelector | None = None

    @property
    def _started(self) -> subprocess.Popen[bytes]:
        """The child, for the methods `wait` and `poll` call once they know it started."""
        if self.proc is None:
            raise RuntimeError(f"{self.argv[0]} never started")
        return self.proc

    def _feed_input(self) -> None:
        # written whole before reading: fine for the small inputs it is for (< 64 KiB, a pipe)
        stdin = self._started.stdin
        if stdin is None or stdin.closed:
            return
        with contextlib.suppress(BrokenPipeError, OSError):
            if self.input:
                stdin.write(self.input)
            stdin.close()

    def _selector(self) -> selectors.BaseSelector:
        """The one selector over this child's pipes (made on first use, closed by `wait`)."""
        if self.sel is None:
            self.sel = selectors.DefaultSelector()
            proc = self._started
            if proc.stdout is not None:  # always a pipe
                self.sel.register(proc.stdout, selectors.EVENT_READ, self.out)
            if proc.stderr is not None:
                self.sel.register(proc.stderr, selectors.EVENT_READ, self.err)
        return self.sel

    def _read_ready(self, sel, wait: float) -> bool:
        """Read one chunk from each ready pipe (waiting at most `wait`); False: none was ready."""
        ready = sel.select(max(0.0, wait))
        for key, _ in ready:
            data = os.read(key.fd, _CHUNK)
            if not data:
                sel.unregister(key.fileobj)
                continue
            key.data.add(data)
            if self.sink is not None and (self.merge or key.data is self.err):
                self.sink(data)  # stream mode: everything; capture mode: stderr
        return bool(ready)

    def _drain(self, rounds: int = 64) -> None:
        """Read what the pipes hold now, without waiting (bounded: a writer may not stop)."""
        sel = self._selector()
        for _ in range(rounds):
            if not sel.get_map() or not self._read_ready(sel, 0):
                return

    def poll(self) -> int | None:
        """For supervisors: keep the pipes flowing (a full pipe would block the child) and
        return its exit status, None while it runs."""
        if self.proc is None:
            return -1
        self._feed_input()
        self._drain()
        return self.proc.poll()

    def _pump(self) -> None:
        sel, exited_at, next_tick = self._selector(), None, time.monotonic() + TICK
        while sel.get_map():
            now = time.monotonic()
            if now >= self.deadline:
                self.timed_out = self._started.poll() is None
                break
            if exited_at is None and self._started.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > GRACE:
                break  # a grandchild holds the pipe: stop reading, it is not ours to wait
            self._read_ready(sel, min(TICK, self.deadline - now))
            if self.tick is not None and time.monotonic() >= next_tick:
                self.tick(time.monotonic() - self.start)
                next_tick = time.monotonic() + TICK

    def wait(self) -> Completed:
        if self.proc is None:
            return Completed(self.argv, None, "", "", 0.0, error=self.error)
        try:
            self._feed_input()
            self._pump()
            if not self.timed_out:
                self.timed_out = not _reap(self.proc, self.deadline)
        finally:  # timeout, Ctrl-C, or grandchildren left behind: the whole group goes
            kill_group(self.proc)
            with contextlib.suppress(OSError, ValueError):
                self._drain()  # what a killed child wrote before it died is its last words
            self._selector().close()
            _close(self.proc)
            if self.proc.poll() is None:
                self.proc.wait()  # SIGKILLed: returns at once
        return Completed(self.argv, None if self.timed_out else self.proc.returncode,
                         self.out.text(), self.err.text(), time.monotonic() - self.start,
                         timed_out=self.timed_out, truncated=bool(self.out.cut or self.err.cut))


def _reap(proc: subprocess.Popen, deadline: float) -> bool:
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        return True
    except subprocess.TimeoutExpired:
        return False


def _close(proc: subprocess.Popen) -> None:
    for f in (proc.stdout, proc.stderr, proc.stdin):
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()


class Running:
    """A started child (see `spawn`); `result()` collects it within its deadline."""

    def __init__(self, child: _Child) -> None:
        self.child = child

    @property
    def proc(self) -> subprocess.Popen | None:
        """The started process (None: it could not start), for supervisors that poll."""
        return self.child.proc

    def poll(self) -> int | None:
        """Read what the child wrote so far and return its exit status (None: running; -1: it
        never started). A supervisor polling several children calls this, not `proc.poll()`."""
        return self.child.poll()

    def watch(self, sink: Callable[[bytes], None],
              tick: Callable[[float], None] | None = None) -> None:
        """Follow the child's stderr while `result()` collects it: `sink` gets each chunk as it
        arrives (first what was read before this call), `tick(elapsed)` about every TICK s."""
        self.child.sink, self.child.tick = sink, tick
        if self.child.err.buf:
            sink(bytes(self.child.err.buf))

    def result(self) -> Completed:
        return self.child.wait()


def spawn(argv: list[str], *, timeout: float, env: dict[str, str] | None = None,
          input: str | None = None, cwd: str | None = None) -> Running:
    """Start argv now and collect it later (lets probes overlap); capture mode."""
    return Running(_Child(argv, timeout, env, input, cwd, merge=False))


def run(argv: list[str], *, timeout: float, env: dict[str, str] | None = None,
        input: str | None = None, cwd: str | None = None) -> Completed:
    """Capture mode: run argv, return its (capped) stdout and stderr."""
    return spawn(argv, timeout=timeout, env=env, input=input, cwd=cwd).result()


def stream(argv: list[str], *, timeout: float, sink: Callable[[bytes], None],
           tick: Callable[[float], None] | None = None, env: dict[str, str] | None = None,
           cwd: str | None = None) -> Completed:
    """Stream mode: stdout+stderr merged, each chunk to `sink`; `.stdout` holds the tail."""
    return _Child(argv, timeout, env, None, cwd, merge=True, sink=sink, tick=tick).wait()
