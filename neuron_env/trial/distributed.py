"""`trial MODEL --world-size N`: the one-process reference, then N ranks (neuron-env's own
launcher, or `--nnodes M` real torchrun agents with a c10d rendezvous on loopback), supervised
under the one deadline; their files in the run directory -> `trial.distributed`.

Every process runs inside/trial_dist.py in the target interpreter. A rank that dies stops the
others after a grace period; at the deadline everything is killed: the launcher's process
groups, and torchrun's workers (each in a session of its own) by the pid files they wrote,
checked against this run's token in their environment first.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuron_env.collectives.launch import COMM_ID_PORT, EFA_ENV, RDZV_PORT
from neuron_env.collectives.runner import _supervise, free_port, rank_env
from neuron_env.errors import UsageError
from neuron_env.report.model import Result
from neuron_env.target_python import launch, protocol
from neuron_env.target_python.outcome import ended
from neuron_env.trial import collected, rundir
from neuron_env.trial.collected import MAX_RANK_FILE, throughput
from neuron_env.trial.options import TrialOptions
from neuron_env.util import proc
from neuron_env.util.render import Raw, sh_join, values

STRATEGIES = ("ddp", "fsdp2")
BACKENDS = {"neuron": "neuron", "cpu": "gloo", "cuda": "nccl"}
TOLERANCE = {"float32": (1e-4, 1e-5)}  # (rtol, atol): |a - b| <= atol + rtol * |b|
TOKEN = "NEURON_ENV_TRIAL_RUN"
PORT_VAR = "NEURON_ENV_TRIAL_PORT"  # a fixed rendezvous port (tests: a port in use)
STOP_GRACE = 5.0  # seconds torchrun agents get to stop their workers before the kill


@dataclass(frozen=True)
class DistOptions:
    world_size: int
    strategy: str = "ddp"
    nnodes: int = 1


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


def validate(o: TrialOptions, d: DistOptions) -> None:
    if d.strategy not in STRATEGIES:
        raise UsageError(f"--strategy {d.strategy!r}: expected ddp or fsdp2")
    if not 1 <= d.world_size <= 1024:
        raise UsageError(f"--world-size {d.world_size}: expected 1..1024")
    if d.nnodes < 1 or d.world_size % d.nnodes:
        raise UsageError(f"--nnodes {d.nnodes}: expected a divisor of --world-size "
                         f"{d.world_size}", hint="e.g. --world-size 4 --nnodes 2")
    if o.dtype != "float32" or o.autocast:
        raise UsageError("--world-size: the distributed trial compares float32 steps",
                         hint="drop --dtype/--autocast, or run them in the one-process trial")
    bad = [f for f, on in (("--compile", o.compile), ("--shapes", o.shapes),
                           ("--batch-sizes", o.batch_sizes)) if on]
    if bad:
        raise UsageError(f"--world-size: {', '.join(bad)} "
                         f"{'belongs' if len(bad) == 1 else 'belong'} to the one-process trial",
                         hint="run those without --world-size")


def payload(o: TrialOptions, d: DistOptions, run_dir: str, role: str) -> dict[str, Any]:
    rtol, atol = TOLERANCE["float32"]
    return {"role": role, "run_dir": run_dir, "model": o.payload()["model"],
            "device": o.device, "backend": BACKENDS[o.device], "strategy": d.strategy,
            "steps": max(1, o.steps), "lr": o.lr, "seed": o.seed, "iterations": o.iterations,
            "rtol": o.rtol if o.rtol is not None else rtol,
            "atol": o.atol if o.atol is not None else atol, "world_size": d.world_size,
            "reference": os.path.join(run_dir, "reference.pt")}


MAX_SIDE_FILE = 1024 * 1024  # a rank's .steps/.error/.usage: lines and a traceback tail


def _read(path: Path, limit: int = MAX_SIDE_FILE) -> str | None:
    """A progress file of the run directory, by the one reader (a FIFO or a device there is
    not read: None, as a missing file)."""
    from neuron_env.util.files import read_bounded

    try:
        return read_bounded(path, limit).decode("utf-8", "replace")
    except OSError:
        return None


def _state(run_dir: Path, rank: int, returncode: int | None = None,
           killed: bool = False, elapsed: float | None = None) -> RankState:
    name = "reference" if rank < 0 else f"rank{rank}"
    lines = (_read(run_dir / f"{name}.steps") or "").splitlines()
    kind, _, last = lines[-1].partition(" ") if lines else ("step", "", "start-up")
    doc_text = _read(run_dir / f"{name}.json", MAX_RANK_FILE)
    doc = None
    if doc_text:
        from neuron_env.errors import BadInput
        from neuron_env.util.files import parse_json

        with contextlib.suppress(BadInput):
            doc = parse_json(doc_text, f"{run_dir / name}.json", finite=False)
    usage = _read(run_dir / f"{name}.usage")
    if usage:
        from neuron_env.util.files import field, parse_json

        what = f"{run_dir / name}.usage"
        u = parse_json(usage, what)
        raise UsageError(field(u, "message", "str", what),
                         hint=field(u, "hint", "str", what, optional=True))
    return RankState(rank, last, kind == "call", doc, _read(run_dir / f"{name}.error"),
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
    left_behind = {"stale_run_dirs": stale} if stale else {}
    try:
        # the user's cwd kept: MODEL is named relative to it (as single-process trial)
        ref = launch.spawn_script(python, "trial_dist.py", payload(o, d, run_dir, "reference"),
                                  timeout=o.timeout, env=_env({}, run_dir, d.world_size),
                                  keep_cwd=True).result()
        rs = _state(Path(run_dir), -1, ref.returncode, ref.timed_out, ref.elapsed)
        if rs.doc is None:
            return DistRun(None, (rs,), time.monotonic() - t0, timed_out=ref.timed_out,
                           where="reference", launcher_tail=protocol.clean(ref.stderr)[-1500:],
                           info=left_behind)
        left = o.timeout - (time.monotonic() - t0)
        if left <= 1:
            return DistRun(rs.doc, (), time.monotonic() - t0, timed_out=True, info=left_behind)
        if d.nnodes > 1:
            out = _agents(python, o, d, run_dir, left)
        else:
            out = _local(python, o, d, run_dir, left)
        return DistRun(rs.doc, out.ranks, time.monotonic() - t0, out.timed_out, out.died,
                       out.launcher_tail, out.port, info={**out.info, **left_behind})
    finally:
        _sweep(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)


def collect(run_dir: str, d: DistOptions) -> DistRun:
    """`--collect RUN_DIR`: the verdict of a run launched elsewhere (--print-launch's commands)
    from the files its reference and ranks left in RUN_DIR, each read and checked by
    trial/collected.py (the one reader, then every field) before any verdict."""
    from neuron_env.util.record import replace

    path = Path(run_dir)
    if not os.path.lexists(path / "reference.json"):
        raise UsageError(f"--collect {run_dir}: no reference.json (run step 1 of "
                         "--print-launch's commands first)")
    ref = replace(_state(path, -1), doc=collected.reference(path / "reference.json"))
    states = []
    for r in range(d.world_size):
        s = _state(path, r)
        f = path / f"rank{r}.json"
        doc = collected.rank(f, r, d.world_size, ref.doc or {}) if os.path.lexists(f) else None
        states.append(replace(s, doc=doc))
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


def _local(python: str, o: TrialOptions, d: DistOptions, run_dir: str, left: float) -> DistRun:
    port, n = _port(), d.world_size
    doc = payload(o, d, run_dir, "rank")
    runs = [launch.spawn_script(python, "trial_dist.py", doc, timeout=left,
                                env=_env(rank_env(r, n, port), run_dir, n), keep_cwd=True)
            for r in range(n)]
    order: list[tuple[int, ...]] = []
    died = _supervise(runs, time.monotonic() + left, order)
    done = [r.result() for r in runs]
    timed_out = died is None and any(c.timed_out for c in done)
    states = tuple(_state(Path(run_dir), r, c.returncode,
                          c.timed_out or (died is not None and r != died and
                                          (c.returncode or 0) < 0), c.elapsed)
                   for r, c in enumerate(done))
    if died is not None:  # among ranks that exited together: a hard crash first
        first = {r for batch in order[:1] for r in batch}
        died = min(first, key=lambda r: (states[r].error is not None, r)) if first else died
    return DistRun(None, states, 0.0, timed_out, died, port=port,
                   info={"launcher": "neuron-env", "rendezvous": f"127.0.0.1:{port}"})


TORCHRUN = "torch.distributed.run"


def agent_args(d: DistOptions, endpoint: str, run_id: str) -> list[str]:
    """One torchrun agent's arguments (the same line on every node; c10d assigns the ranks)."""
    return [f"--nnodes={d.nnodes}",
            f"--nproc-per-node={d.world_size // d.nnodes}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint={endpoint}", f"--rdzv-id={run_id}", "--max-restarts=0",
            "--monitor-interval=0.5"]


def _agents(python: str, o: TrialOptions, d: DistOptions, run_dir: str, left: float) -> DistRun:
    port = _port()
    args = [*agent_args(d, f"127.0.0.1:{port}", Path(run_dir).name),
            "--local-addr=127.0.0.1", launch.script_path("trial_dist.py"),
            json.dumps(payload(o, d, run_dir, "rank"))]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE",
                                                             "MASTER_ADDR", "MASTER_PORT")}
    agents = [launch.spawn_module(python, TORCHRUN, args, timeout=left,
                                  env=_env(env, run_dir, d.world_size), keep_cwd=True)
              for _ in range(d.nnodes)]
    order: list[tuple[int, ...]] = []
    failed = _supervise(agents, time.monotonic() + left, order)
    if failed is not None or any(a.proc is not None and a.proc.poll() is None for a in agents):
        _stop_agents(agents)
    done = [a.result() for a in agents]
    timed_out = failed is None and any(c.timed_out for c in done)
    codes = worker_exits("\n".join(c.stderr for c in done))
    states = tuple(_state(Path(run_dir), r, codes.get(r), timed_out or (
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
    """Kill what a rank left behind (torchrun workers: own sessions), if it is still ours."""
    mark = f"{TOKEN}={run_dir}".encode()
    for pid_file in Path(run_dir).glob("*.pid"):
        try:
            pid = int(pid_file.read_text())
            if mark in Path(f"/proc/{pid}/environ").read_bytes():
                os.killpg(pid, signal.SIGKILL)
        except (OSError, ValueError):
            continue


# -- the verdict (pure) --------------------------------------------------------------------------
def verdict(r: DistRun, d: DistOptions, timeout: float, backend: str) -> Result:
    if r.where == "reference":
        res = _reference_failed(r, timeout)
    elif r.timed_out or r.died is not None or any(s.doc is None for s in r.ranks) or \
            not r.ranks:
        res = _launch_failed(r, timeout)
    else:
        res = _compare(r, d, backend)
    return _left_behind(res, r.info.get("stale_run_dirs") or [])


def _left_behind(res: Result, stale: list[dict[str, Any]]) -> Result:
    """The run directories a dead run left: named in the summary and the details."""
    if not stale:
        return res
    from neuron_env.util.record import replace

    return replace(res, summary=f"{res.summary} [{rundir.summary(stale)}]",
                   details=dict(res.details or {}, stale_run_dirs=stale))


def _reference_failed(r: DistRun, timeout: float) -> Result:
    s = r.ranks[0]
    what, fix = ended(s.returncode, r.timed_out, timeout, s.elapsed, s.error)
    why = (f"{what} during {s.last}" if r.timed_out else
           f"died during {s.last}: it {what}")
    if not r.timed_out and not s.error and r.launcher_tail.strip() and (s.returncode or 0) > 0:
        why += f" [{r.launcher_tail.strip().splitlines()[-1][:300]}]"
    return Result("trial.distributed", "trial", "fail",
                  f"the one-process reference (the whole batch, no process group) {why}; no "
                  "rank was started", timed_out=r.timed_out, fix=fix,
                  details={"stage": "reference", "step": s.last, "returncode": s.returncode,
                           "elapsed_s": s.elapsed, "error": (s.error or "")[-800:] or None,
                           "stderr_tail": r.launcher_tail})


def _doing(s: RankState) -> str:
    return f"{'waiting inside ' if s.inside else ''}{s.last}"


def _launch_failed(r: DistRun, timeout: float) -> Result:
    ranks = list(r.ranks)
    fix = ("a rank that never enters a collective is stuck before it (its device, a compile, "
           "the model's own code); one waiting inside waits for that peer; a rendezvous that "
           "never completes: the port or the address")
    if r.died is not None and not r.timed_out:
        dead = ranks[r.died]
        what, fix = ended(dead.returncode, False, timeout, dead.elapsed, dead.error)
        if dead.returncode is None and not dead.error:
            what = "ended without a result (its torchrun agent's report is below)"
        rest = [s for s in ranks if s.rank != dead.rank and s.doc is None]
        msg = (f"rank {dead.rank} died during {dead.last}: it {what}"
               + (f"; rank {', '.join(str(s.rank) for s in rest)} was stopped "
                  f"({'; '.join(f'rank {s.rank}: {_doing(s)}' for s in rest)})" if rest else ""))
    elif not ranks or all(s.last == "start-up" for s in ranks):
        msg = (f"no rank started within {timeout:g}s: the launcher never got past the "
               f"rendezvous at 127.0.0.1:{r.port} (a port in use?)")
    else:
        stuck = [s for s in ranks if s.doc is None and not s.inside]
        waiting = [s for s in ranks if s.doc is None and s.inside]
        parts = [f"rank {s.rank} hung in {s.last} (never entered the collective)"
                 for s in stuck]
        parts += [f"rank {s.rank} waited inside {s.last}" for s in waiting]
        msg = f"timed out after {timeout:g}s: " + "; ".join(parts or ["every rank finished?"])
    tail = f" [{r.launcher_tail.strip().splitlines()[-1]}]" if r.launcher_tail.strip() else ""
    timed_out = r.timed_out or r.died is None  # no rank died: the deadline ended it
    return Result("trial.distributed", "trial", "fail", msg + " (every process was stopped)"
                  + tail[:300], timed_out=timed_out, fix=fix,
                  details={"stage": "launch", "port": r.port, "timed_out": timed_out,
                           "processes": [
                      {"rank": s.rank, "step": s.last, "inside_collective": s.inside,
                       "returncode": s.returncode, "killed": s.killed, "elapsed_s": s.elapsed,
                       "error": (s.error or "")[-800:] or None} for s in ranks],
                      "launcher_tail": r.launcher_tail[-1500:]})


def _worst(rows: list[tuple[int, dict]]) -> tuple[int, dict] | None:
    bad = [x for x in rows if not x[1]["ok"]]
    pool = bad or rows
    return max(pool, key=lambda x: float(x[1]["excess"])) if pool else None


def _rank_dependent(docs: list[dict], where: str, tag: str,
                    details: dict[str, Any]) -> Result | None:
    """A rank whose initial parameters or shard output differ from the one-process run."""
    init = [(x["rank"], row) for x in docs for row in x["initial"]]
    if init:
        ranks = sorted({rk for rk, _ in init})
        rk, row = init[0]
        details["worst"] = dict(row, rank=rk)
        return Result("trial.distributed", "trial", "fail",
                      f"{where}: rank {', '.join(map(str, ranks))} built different initial "
                      f"parameters from the one-process model ({row['tensor']} on rank {rk}): "
                      "unseeded or rank-dependent initialisation" + tag, details=details,
                      fix="seed every random draw in the model's construction, the same on "
                          "every rank (torch.manual_seed before building it)")
    outs = [(x["rank"], row) for x in docs for row in x["outputs"]]
    bad_out = [(rk, row) for rk, row in outs if not row["ok"]]
    if bad_out:
        ranks = sorted({rk for rk, _ in bad_out})
        first_phase = min(bad_out, key=lambda x: int(x[1]["phase"].split()[-1]))[1]["phase"]
        rk, row = next(x for x in bad_out if x[1]["phase"] == first_phase)
        details["worst"] = dict(row, rank=rk)
        ok = sorted({x["rank"] for x in docs} - set(ranks))
        return Result("trial.distributed", "trial", "fail",
                      f"{where}: rank {', '.join(map(str, ranks))}'s output on its shard "
                      f"differs from the one-process output ({row['tensor']}, {first_phase}, "
                      f"{_how_far(row)})"
                      + (f"; rank {', '.join(map(str, ok))} matched" if ok else "")
                      + ": the model depends on the rank (a rank-dependent branch, unseeded "
                        "randomness in forward)" + tag, details=details,
                      fix="make forward independent of the rank and seed any randomness; "
                          "details.worst names the step")
    return None


def _compare(r: DistRun, d: DistOptions, backend: str) -> Result:
    docs = [s.doc for s in r.ranks if s.doc]
    ref = r.reference or {}
    per_rank = [{"rank": x["rank"], "host": x.get("host"), "first_step_s": x["first_step_s"],
                 "step_s": x["step_s"], "shard": x["shard"]} for x in docs]
    thr = throughput(ref, docs, d.world_size)
    details: dict[str, Any] = {
        "world_size": d.world_size, "strategy": d.strategy, "nnodes": d.nnodes,
        "backend": backend, "steps": len(docs[0]["losses"]), "ranks": per_rank,
        "throughput": thr, "tensors": docs[0]["params_checked"],
        "mode": ref.get("mode"), "stochastic": ref.get("stochastic") or [],
        "unused_parameters": ref.get("unused") or [],
        "not_sharded_outputs": ref.get("not_sharded") or [],
        "loss": {"reference": ref.get("losses") or [],
                 "ranks": [row.get("value") for row in docs[0]["losses"]]}, **r.info}
    tag = " [EMULATED]" if thr["emulated"] else ""
    where = f"{d.world_size} ranks ({d.strategy}, {backend}" + (
        f", {d.nnodes} torchrun agents" if d.nnodes > 1 else "") + ")"
    dependent = _rank_dependent(docs, where, tag, details)
    if dependent is not None:
        return dependent
    losses = [(x["rank"], row) for x in docs for row in x["losses"]]
    params = [(x["rank"], x["worst_param"]) for x in docs if x.get("worst_param")]
    worst = _worst(losses + params)
    if worst is not None:
        details["worst"] = dict(worst[1], rank=worst[0])
    bad = [(rk, row) for rk, row in losses + params if not row["ok"]]
    if bad:
        rk, row = worst or bad[0]
        n_bad = len({t for x in docs for t in x["bad_params"]})
        return Result("trial.distributed", "trial", "fail",
                      f"{where}: {row['tensor']} ({row['phase']}) differs from the one-process "
                      f"run on rank {rk} ({_how_far(row)}); {n_bad} of "
                      f"{details['tensors']} parameters differ" + tag, details=details,
                      fix="the per-rank outputs matched, so the reduction is wrong: a custom "
                          "gradient hook, a loss that is not a mean over the batch, or the "
                          "backend's all-reduce (neuron-env collectives)")
    w = details.get("worst") or {}
    return Result("trial.distributed", "trial", "pass",
                  f"{where}: loss and {details['tensors']} parameters after "
                  f"{details['steps']} step(s) match one process on the whole batch (worst "
                  f"{w.get('tensor')} on rank {w.get('rank')}, max |diff| "
                  f"{_g(w.get('max_abs'))}){_mode_note(ref, docs[0].get('unused'))}; "
                  f"{thr['samples_per_s']:.1f} samples/s, scaling "
                  f"efficiency {_pct(thr['scaling_efficiency'])}" + tag, details=details,
                  observed={"samples_per_s": round(thr["samples_per_s"], 3)})


def _how_far(row: dict[str, Any]) -> str:
    """How a compared tensor differs, in the one-process trial's words."""
    if row.get("missing"):
        return "missing on the rank"
    if row.get("shape"):
        return f"shape {row['shape'][0]}, expected {row['shape'][1]}"
    return (f"max |diff| {_g(row.get('max_abs'))}, {row.get('mismatched')}/"
            f"{row.get('numel')} elements")


def _mode_note(ref: dict[str, Any], how: str | None) -> str:
    """What the reference decided as the one-process trial does: eval mode for stochastic
    modules, and DDP told about parameters the loss leaves without a gradient."""
    out = ""
    stochastic = ref.get("stochastic") or []
    if stochastic:
        out += ("; compared in EVAL mode: the model draws random numbers in train mode ("
                + ", ".join(map(str, stochastic[:3])) + (", ..." if len(stochastic) > 3 else "")
                + "), which the whole batch and the shards cannot draw alike")
    unused = ref.get("unused") or []
    if unused:
        out += (f"; {len(unused)} parameter(s) get no gradient from the loss ("
                + ", ".join(map(str, unused[:3])) + (", ..." if len(unused) > 3 else "")
                + "): " + {"find_unused_parameters": "DDP ran with find_unused_parameters=True "
                                                     "(your training script needs it too)",
                           "ignored": "DDP left them out of its reduction (the emulated "
                                      "device cannot run find_unused_parameters=True); your "
                                      "training script needs find_unused_parameters=True"}.get(
                    how or "", "FSDP2 needs no flag for them"))
    return out


def _g(v: Any) -> str:
    return "-" if v is None else f"{float(v):.3g}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f}%"


# -- --print-launch ------------------------------------------------------------------------------
def launch_script(kind: str, python: str, o: TrialOptions, d: DistOptions) -> str:
    """The commands that run the same check on a real cluster (RUN_DIR: shared storage)."""
    if kind not in ("torchrun", "srun"):
        raise UsageError(f"--print-launch {kind!r}: expected torchrun or srun")
    validate(o, d)
    values((("--python", python), ("MODEL", o.model), ("--device", o.device)))
    rd = "${RUN_DIR:?a directory every node can read and write}"
    ref = sh_join([python, launch.script_path("trial_dist.py"),
                   json.dumps(payload(o, d, "@RUN_DIR@", "reference"))]).replace(
        "@RUN_DIR@", "'\"${RUN_DIR}\"'")
    rank = sh_join([launch.script_path("trial_dist.py"),
                    json.dumps(payload(o, d, "@RUN_DIR@", "rank"))]).replace(
        "@RUN_DIR@", "'\"${RUN_DIR}\"'")
    efa = [f"export {k}={v}" for k, v in EFA_ENV]
    head = [f"# neuron-env trial {o.model} --world-size {d.world_size} --strategy {d.strategy}"
            f" on {d.nnodes} node(s)", f": {rd}",
            "# 1. once, on one node: the one-process reference (the whole batch)", ref]
    tail = ["# 3. anywhere that reads $RUN_DIR: the verdict (each rank left rank<R>.json)",
            sh_join(["neuron-env", "trial", o.model, "--world-size", str(d.world_size),
                     "--strategy", d.strategy, "--nnodes", str(d.nnodes), "--device", o.device,
                     "--collect", Raw('"$RUN_DIR"')]), ""]
    if kind == "torchrun":
        hd = "${HEAD_ADDR:?the address of the first node}"
        line = sh_join(launch.module_argv(python, TORCHRUN, *agent_args(
            d, "@HEAD@", "neuron-env-trial"))).replace(
            "@HEAD@", f"{hd}:{RDZV_PORT}")
        return "\n".join([*head, "# 2. on each node (the same line; c10d assigns the ranks)",
                          f"export NEURON_RT_ROOT_COMM_ID={hd}:{COMM_ID_PORT}", *efa,
                          f"{line} -- {rank}", *tail])
    return "\n".join(["#!/bin/bash", f"#SBATCH --nodes={d.nnodes}",
                      f"#SBATCH --ntasks-per-node={d.world_size // d.nnodes}",
                      "#SBATCH --exclusive", *head[1:],
                      'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
                      '| head -n 1)', f"export MASTER_PORT={RDZV_PORT}",
                      f"export NEURON_RT_ROOT_COMM_ID=$MASTER_ADDR:{COMM_ID_PORT}", *efa,
                      "# 2. every rank (the rank script reads SLURM_PROCID/SLURM_NTASKS)",
                      f"srun --kill-on-bad-exit=1 -- {sh_join([python])} {rank}", *tail])
