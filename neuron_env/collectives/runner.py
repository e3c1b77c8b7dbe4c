"""Start N ranks of the collectives script in the target interpreter and supervise them.

Every rank starts through neuron_env/target_python/ (WORKLOAD mode; the funnel: its own process
group, the one deadline). A rank that dies takes the others down after a short grace (they
would only wait for it); at the deadline every rank is killed. Each rank's last step marker,
and whether it said it entered the collective after it, tell which rank hung and where (the
protocol: neuron_env/target_python/).
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass

from neuron_env.guards import proc
from neuron_env.target_python import launch as target
from neuron_env.target_python import protocol

GRACE = 10.0  # seconds the surviving ranks get after one died, before they are stopped


@dataclass(frozen=True)
class RankOutcome:
    rank: int
    returncode: int | None
    killed: bool  # stopped by us: the deadline, or after another rank died
    last_step: str
    entered: bool  # said CALL after its last step: it was inside the collective
    error: str | None
    stderr_tail: str
    pid: int | None = None


@dataclass(frozen=True)
class CollectivesRun:
    doc: dict | None  # rank 0's document: every rank's rows merged
    ranks: tuple[RankOutcome, ...]
    elapsed: float
    timed_out: bool
    stopped_after: int | None  # the rank whose death stopped the others
    exit_order: tuple[tuple[int, ...], ...] = ()  # ranks seen exiting, poll by poll


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank: int, world: int, port: int) -> dict[str, str]:
    return target.target_env(
        {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
         "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)},
        drop=("SLURM_", "TORCHELASTIC"))


def launch(python: str, payload: dict, world: int, timeout: float) -> CollectivesRun:
    t0 = time.monotonic()
    port = free_port()
    runs = [target.spawn_script(python, "collectives.py", payload, timeout=timeout,
                                env=rank_env(r, world, port)) for r in range(world)]
    order: list[tuple[int, ...]] = []
    stopped_after = supervise(runs, t0 + timeout, order)
    done = [r.result() for r in runs]
    timed_out = stopped_after is None and any(c.timed_out for c in done)
    killed = {i for i, c in enumerate(done) if c.timed_out or
              (stopped_after is not None and i != stopped_after and c.returncode is not None
               and c.returncode < 0)}
    ranks = tuple(_outcome(i, c, i in killed, r.proc.pid if r.proc else None)
                  for i, (r, c) in enumerate(zip(runs, done, strict=True)))
    return CollectivesRun(protocol.document(done[0].stdout) if done else None, ranks,
                          time.monotonic() - t0, timed_out, stopped_after, tuple(order))


def supervise(runs: list, deadline: float, order: list[tuple[int, ...]]) -> int | None:
    """Wait for every rank; when one fails, stop the rest after GRACE. Returns that rank;
    the one supervisor of ranks (collectives' and the distributed trial's, trial/distributed/);
    `order` gets, poll by poll, the ranks seen exiting (a crash first, its victims later)."""
    failed_at, failed = 0.0, None
    seen: set[int] = set()
    while time.monotonic() < deadline:
        codes = [r.poll() for r in runs]  # also reads their pipes: a full one would block
        new = tuple(i for i, c in enumerate(codes) if c is not None and i not in seen)
        if new:
            order.append(new)
            seen.update(new)
        if all(c is not None for c in codes):
            return failed
        bad = [i for batch in order for i in batch if codes[i] not in (None, 0)]
        if bad and failed is None:
            failed, failed_at = bad[0], time.monotonic()
        if failed is not None and time.monotonic() - failed_at > GRACE:
            for r in runs:
                if r.proc is not None and r.proc.poll() is None:
                    proc.kill_group(r.proc)
            return failed
        time.sleep(0.05)
    return failed


def _outcome(rank: int, c: proc.Completed, killed: bool, pid: int | None = None) -> RankOutcome:
    t = protocol.rank_trace(c.stderr or "")
    error = f"could not start: {c.error}" if c.error else t.error
    return RankOutcome(rank, c.returncode, killed, t.last_step, t.entered, error, t.tail, pid)


def probe_devices(python: str, device: str, timeout: float = 120.0) -> tuple[int, bool]:
    """(devices the target's torch sees, emulated?) — one short run of the target."""
    if device == "cpu":
        return 0, False
    code = (f"import json, torch; m = getattr(torch, {device!r}, None); "
            "n = m.device_count() if m is not None and hasattr(m, 'device_count') else 0; "
            "e = bool(getattr(m, 'is_emulated', lambda: False)()) if m is not None else False; "
            "print(json.dumps([n, e]))")
    res = target.run_code(python, code, timeout=timeout)
    try:
        n, e = json.loads(res.stdout.strip().splitlines()[-1])
        return int(n), bool(e)
    except (ValueError, IndexError):
        return 0, False


def run_one(python: str, payload: dict, timeout: float) -> CollectivesRun:
    """`--launched`: this process is one rank started by torchrun or srun."""
    t0 = time.monotonic()
    c = target.run_script(python, "collectives.py", payload, timeout=timeout)
    rank = int(os.environ.get("RANK") or os.environ.get("SLURM_PROCID") or 0)  # see launched_rank
    doc = protocol.document(c.stdout)
    if doc is None and rank != 0 and c.returncode == 0:
        doc = {"rows": [], "note": f"rank {rank}: rank 0 reports for every rank"}
    stopped = None if c.returncode in (0, None) else rank
    return CollectivesRun(doc, (_outcome(rank, c, c.timed_out),), time.monotonic() - t0,
                          c.timed_out, stopped)
