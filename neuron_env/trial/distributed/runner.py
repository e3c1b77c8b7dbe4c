"""`trial MODEL --world-size N`: start and supervise the processes (the one-process reference,
then N ranks: neuron-env's own launcher, or `--nnodes M` real torchrun agents with a c10d
rendezvous on loopback) under the one deadline, and read what they left in the run directory
(or, with `--collect`, what a run launched elsewhere left there) -> a DistRun for results.py.

Every process runs inside/trial_dist.py in the target interpreter. A rank that dies stops the
others after a grace period; at the deadline everything is killed: the launcher's process
groups, and torchrun's workers (each in a session of its own) by the pid files they wrote,
checked against this run's token in their environment first.

The run directory's files are read by THE opener of a directory someone else can write
(guards/files.open_dir/read_at): the directory judged by guards/trust, every file opened
relative to it with O_NOFOLLOW, regular files of this user only; a link is treated like a
FIFO, never followed and never shown (#45, finding 1).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from neuron_env.collectives.runner import free_port, rank_env, supervise
from neuron_env.errors import BadInput, FileProblem, UsageError
from neuron_env.guards import proc
from neuron_env.guards.files import open_dir, parse_json, read_at
from neuron_env.target_python import launch, protocol
from neuron_env.trial import collected, rundir
from neuron_env.trial.collected import MAX_RANK_FILE
from neuron_env.trial.distributed.launch import TORCHRUN, agent_args, rank_argv
from neuron_env.trial.distributed.options import (
    PORT_VAR,
    TOKEN,
    DistOptions,
    payload,
)
from neuron_env.trial.options import TrialOptions

STOP_GRACE = 5.0  # seconds torchrun agents get to stop their workers before the kill
MAX_SIDE_FILE = 1024 * 1024  # a rank's .steps/.error/.usage: lines and a traceback tail


@dataclass(frozen=True)
class RankState:
    rank: int
    last: str  # the step it was in ("start-up" before its first)
    inside: bool  # it had entered a collective there (waiting for its peers)
    doc: dict | None
    error: str | None
    returncode: int | None = None  # None: under torchrun (the agent's children)
    killed: bool = False  # stopped by neuron-env (a peer died, or the deadline)
    elapsed: float | None = None  # seconds it ran (neuron-env's launcher)


@dataclass(frozen=True)
class DistRun:
    reference: dict | None
    ranks: tuple[RankState, ...]
    elapsed: float
    timed_out: bool = False
    died: int | None = None  # the rank whose death stopped the run
    launcher_tail: str = ""
    port: int = 0
    where: str = "ranks"  # "reference": the one-process run failed
    info: dict[str, Any] = field(default_factory=dict)




class RunFiles:
    """The run directory, opened once (guards/files.open_dir: judged by guards/trust), and the
    files in it, each read by guards/files.read_at (relative, O_NOFOLLOW, regular, ours)."""

    def __init__(self, path: str, what: str) -> None:
        self.path, self.fd = path, open_dir(path, what)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def exists(self, name: str) -> bool:
        """`name` is there (a link too: reading it is then refused, never followed)."""
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return False
        return True

    def text(self, name: str, limit: int = MAX_SIDE_FILE) -> str | None:
        """A progress file: its text, or None when it is missing or is not a regular file of
        this user (a link, a FIFO, a device: not read, not shown, as a missing file)."""
        try:
            return read_at(self.fd, name, limit).decode("utf-8", "replace")
        except (FileProblem, OSError):
            return None

    def names(self) -> list[str]:
        try:
            return os.listdir(self.fd)
        except OSError:
            return []


def _state(files: RunFiles, rank: int, returncode: int | None = None,
           killed: bool = False, elapsed: float | None = None) -> RankState:
    name = "reference" if rank < 0 else f"rank{rank}"
    lines = (files.text(f"{name}.steps") or "").splitlines()
    kind, _, last = lines[-1].partition(" ") if lines else ("step", "", "start-up")
    doc_text = files.text(f"{name}.json", MAX_RANK_FILE)
    doc = None
    where = os.path.join(files.path, name)
    if doc_text:
        with contextlib.suppress(BadInput):
            doc = parse_json(doc_text, f"{where}.json", finite=False)
    usage = files.text(f"{name}.usage")
    if usage:
        from neuron_env.guards.files import field

        what = f"{where}.usage"
        u = parse_json(usage, what)
        raise UsageError(field(u, "message", "str", what),
                         hint=field(u, "hint", "str", what, optional=True))
    return RankState(rank, last, kind == "call", doc, files.text(f"{name}.error"),
                     returncode, killed, elapsed)


def _env(extra: dict[str, str], run_dir: str, world: int) -> dict[str, str]:
    """The target's environment; every process (the reference too: it times one rank's share)
    gets one rank's share of the host's cores, as torchrun gives its workers, unless the user
    chose OMP_NUM_THREADS."""
    env = launch.target_env(extra)
    env[TOKEN] = run_dir
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // world)))
    return env




def run(python: str, o: TrialOptions, d: DistOptions) -> DistRun:
    """The reference, then the ranks, within o.timeout; the run directory is removed after,
    and the ones a dead run left (a neuron-env killed by SIGKILL) on this run's start."""
    t0 = time.monotonic()
    if os.environ.get(PORT_VAR):
        _port()  # a chosen port in use: said before minutes of reference run
    stale = rundir.stale(_sweep)
    run_dir = rundir.create()  # 0700, ours, with our owner record
    files = RunFiles(run_dir, f"the run directory {run_dir}")
    left_behind = {"stale_run_dirs": stale} if stale else {}
    try:
        # the user's cwd kept: MODEL is named relative to it (as single-process trial)
        ref = launch.spawn_script(python, "trial_dist.py", payload(o, d, run_dir, "reference"),
                                  timeout=o.timeout, env=_env({}, run_dir, d.world_size),
                                  keep_cwd=True).result()
        rs = _state(files, -1, ref.returncode, ref.timed_out, ref.elapsed)
        if rs.doc is None:
            return DistRun(None, (rs,), time.monotonic() - t0, timed_out=ref.timed_out,
                           where="reference", launcher_tail=protocol.clean(ref.stderr)[-1500:],
                           info=left_behind)
        left = o.timeout - (time.monotonic() - t0)
        if left <= 1:
            return DistRun(rs.doc, (), time.monotonic() - t0, timed_out=True, info=left_behind)
        out = (_agents if d.nnodes > 1 else _local)(python, o, d, files, left)
        return DistRun(rs.doc, out.ranks, time.monotonic() - t0, out.timed_out, out.died,
                       out.launcher_tail, out.port, info={**out.info, **left_behind})
    finally:
        _sweep(run_dir)
        files.close()
        shutil.rmtree(run_dir, ignore_errors=True)


def collect(run_dir: str, d: DistOptions) -> DistRun:
    """`--collect RUN_DIR`: the verdict of a run launched elsewhere (--print-launch's commands)
    from the files its reference and ranks left in RUN_DIR, each read and checked by
    trial/collected.py (the one reader, then every field) before any verdict. RUN_DIR is
    judged by guards/trust first: one that other users can write is refused (exit 2)."""
    from neuron_env.util.record import replace

    files = RunFiles(run_dir, f"--collect {run_dir}")
    try:
        if not files.exists("reference.json"):
            raise UsageError(f"--collect {run_dir}: no reference.json (run step 1 of "
                             "--print-launch's commands first)")
        ref = replace(_state(files, -1), doc=collected.reference(files.fd, run_dir))
        states = []
        for r in range(d.world_size):
            s = _state(files, r)
            doc = collected.rank(files.fd, run_dir, r, d.world_size, ref.doc or {}) \
                if files.exists(f"rank{r}.json") else None
            states.append(replace(s, doc=doc))
    finally:
        files.close()
    died = next((s.rank for s in states if s.error), None)
    missing = [s for s in states if s.doc is None]
    info: dict[str, Any] = {"launcher": f"collected from {run_dir}"}
    if not missing and died is None:
        note = collected.plausible(ref.doc or {}, [s.doc for s in states if s.doc],
                                   d.world_size)
        if note:
            info["implausible"] = note
    return DistRun(ref.doc, tuple(states), 0.0, timed_out=bool(missing) and died is None,
                   died=died, info=info)


def _port() -> int:
    """The rendezvous port: a free one, or the one NEURON_ENV_TRIAL_PORT names, which must be
    free: one in use is named as such (exit 2) before any rank starts, not blamed on rank 0."""
    value = os.environ.get(PORT_VAR)
    if not value:
        return free_port()
    import socket

    if not value.isdigit() or not 0 < int(value) < 65536:
        raise UsageError(f"{PORT_VAR}={value!r}: not a TCP port (1-65535)")
    port = int(value)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise UsageError(f"the rendezvous port 127.0.0.1:{port} ({PORT_VAR}) is already in "
                             f"use by another process ({e.strerror or e}): no rank was started",
                             hint=f"free the port, choose another {PORT_VAR}, or unset it "
                                  "(a free port is then chosen)") from None
    return port


def _local(python: str, o: TrialOptions, d: DistOptions, files: RunFiles,
           left: float) -> DistRun:
    port, n, run_dir = _port(), d.world_size, files.path
    doc = payload(o, d, run_dir, "rank")
    runs = [launch.spawn_script(python, "trial_dist.py", doc, timeout=left,
                                env=_env(rank_env(r, n, port), run_dir, n), keep_cwd=True)
            for r in range(n)]
    order: list[tuple[int, ...]] = []
    died = supervise(runs, time.monotonic() + left, order)
    done = [r.result() for r in runs]
    timed_out = died is None and any(c.timed_out for c in done)
    states = tuple(_state(files, r, c.returncode,
                          c.timed_out or (died is not None and r != died and
                                          (c.returncode or 0) < 0), c.elapsed)
                   for r, c in enumerate(done))
    if died is not None:  # among ranks that exited together: a hard crash first
        first = {r for batch in order[:1] for r in batch}
        died = min(first, key=lambda r: (states[r].error is not None, r)) if first else died
    return DistRun(None, states, 0.0, timed_out, died, port=port,
                   info={"launcher": "neuron-env", "rendezvous": f"127.0.0.1:{port}"})




def _agents(python: str, o: TrialOptions, d: DistOptions, files: RunFiles,
            left: float) -> DistRun:
    port, run_dir = _port(), files.path
    args = agent_args(d, f"127.0.0.1:{port}", os.path.basename(run_dir),
                      "--local-addr=127.0.0.1", *rank_argv(payload(o, d, run_dir, "rank")))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE",
                                                             "MASTER_ADDR", "MASTER_PORT")}
    agents = [launch.spawn_module(python, TORCHRUN, args, timeout=left,
                                  env=_env(env, run_dir, d.world_size), keep_cwd=True)
              for _ in range(d.nnodes)]
    order: list[tuple[int, ...]] = []
    failed = supervise(agents, time.monotonic() + left, order)
    if failed is not None or any(a.proc is not None and a.proc.poll() is None for a in agents):
        _stop_agents(agents)
    done = [a.result() for a in agents]
    timed_out = failed is None and any(c.timed_out for c in done)
    codes = worker_exits("\n".join(c.stderr for c in done))
    states = tuple(_state(files, r, codes.get(r), timed_out or (
        r in codes and codes[r] == -signal.SIGTERM)) for r in range(d.world_size))
    died = first_death(states) if failed is not None or any(s.error for s in states) else None
    tail = "\n".join(f"agent {i}: {c.stderr.strip()[-700:]}" for i, c in enumerate(done)
                     if c.returncode not in (0, None) or c.timed_out)
    return DistRun(None, states, 0.0, timed_out, died, tail, port,
                   info={"launcher": f"torchrun x{d.nnodes} (c10d rendezvous)",
                         "rendezvous": f"127.0.0.1:{port}",
                         "agents": [c.returncode for c in done]})


_FAILURE = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:[^\n]*\n\s*exitcode\s*:\s*(-?\d+)")


def worker_exits(agent_stderr: str) -> dict[int, int]:
    """{rank: exit code} of the workers a torchrun agent reported failed (its
    ChildFailedError summary: `rank : 1 (local_rank: 1)` / `exitcode : -9 (pid: ...)`)."""
    out: dict[int, int] = {}
    for m in _FAILURE.finditer(agent_stderr):
        out.setdefault(int(m.group(1)), int(m.group(2)))
    return out


_LOST_PEER = re.compile(r"closed by peer|connection reset|broken pipe|socket timeout|"
                        r"watchdog|peer", re.IGNORECASE)


def first_death(states: tuple[RankState, ...]) -> int | None:
    """The rank whose death stopped a torchrun run (the agents report no order): killed by a
    signal of its own, then a hard exit without a Python error, then a Python error of its own,
    then one that only says a peer went away (the victims of the first)."""
    def rank(s: RankState) -> tuple[int, int]:
        code, stopped = s.returncode, s.returncode == -signal.SIGTERM
        if code is not None and code < 0 and not stopped:
            return 0, s.rank
        if code not in (None, 0) and not stopped and not s.error:
            return 1, s.rank
        if s.error:
            return (3 if _LOST_PEER.search(s.error.strip().splitlines()[-1]) else 2), s.rank
        return 4, s.rank
    dead = [s for s in states if s.doc is None]
    return min(dead, key=rank).rank if dead else None


def _stop_agents(agents: list[proc.Running]) -> None:
    """SIGTERM: torchrun stops its workers; a kill after STOP_GRACE."""
    for a in agents:
        if a.proc is not None and a.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(a.proc.pid, signal.SIGTERM)
    end = time.monotonic() + STOP_GRACE
    while time.monotonic() < end and any(a.poll() is None for a in agents):
        time.sleep(0.1)
    for a in agents:
        if a.proc is not None and a.proc.poll() is None:
            proc.kill_group(a.proc)




def _sweep(run_dir: str) -> None:
    """Kill what a rank left behind (torchrun workers: own sessions), if it is still ours:
    the pid files read by the one opener (a link is not followed)."""
    mark = f"{TOKEN}={run_dir}".encode()
    try:
        files = RunFiles(run_dir, run_dir)
    except BadInput:
        return
    try:
        for name in files.names():
            if not name.endswith(".pid"):
                continue
            try:
                pid = int(files.text(name, 64) or "")
                if mark in open_environ(pid):
                    os.killpg(pid, signal.SIGKILL)
            except (OSError, ValueError):
                continue
    finally:
        files.close()


def open_environ(pid: int) -> bytes:
    """/proc/PID/environ (the kernel's file: read as it is)."""
    from pathlib import Path

    return Path(f"/proc/{pid}/environ").read_bytes()
