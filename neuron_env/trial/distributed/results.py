"""Pure: a supervised (or collected) run -> `trial.distributed`'s Result: which process died
or hung and where, or the comparison of every rank with the one-process reference."""

from __future__ import annotations

from typing import Any

from neuron_env.report.model import Result
from neuron_env.target_python.outcome import ended
from neuron_env.trial import rundir
from neuron_env.trial.collected import checked_samples, throughput, timing
from neuron_env.trial.distributed.options import DistOptions
from neuron_env.trial.distributed.runner import DistRun, RankState


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


def _brief(samples: list[float] | None) -> dict[str, Any] | None:
    """A rank's spread (report/noise.spread of its own timed steps), without the samples."""
    from neuron_env.report import noise

    return noise.spread(timing(samples)) if samples else None


def _compare(r: DistRun, d: DistOptions, backend: str) -> Result:
    docs = [dict(s.doc, step_samples_s=checked_samples(s.doc)) for s in r.ranks if s.doc]
    ref = r.reference or {}
    per_rank = [{"rank": x["rank"], "host": x.get("host"), "first_step_s": x["first_step_s"],
                 "step_s": x["step_s"], "shard": x["shard"],
                 "spread": _brief(x["step_samples_s"])} for x in docs]
    thr = throughput(ref, docs, d.world_size)
    details: dict[str, Any] = {
        "world_size": d.world_size, "strategy": d.strategy, "nnodes": d.nnodes,
        "backend": backend, "steps": len(docs[0]["losses"]), "ranks": per_rank,
        "throughput": thr, "tensors": docs[0]["params_checked"],
        "mode": ref.get("mode"), "stochastic": ref.get("stochastic") or [],
        "unused_parameters": ref.get("unused") or [],
        "not_sharded_outputs": ref.get("not_sharded") or [],
        "batch_coupled": ref.get("batch_coupled") or {},
        "loss": {"reference": ref.get("losses") or [],
                 "ranks": [row.get("value") for row in docs[0]["losses"]]}, **r.info}
    tag = " [EMULATED]" if thr["emulated"] else ""
    where = f"{d.world_size} ranks ({d.strategy}, {backend}" + (
        f", {d.nnodes} torchrun agents" if d.nnodes > 1 else "") + ")"
    dependent = _rank_dependent(docs, where, tag, details)
    if dependent is not None:
        return _coupled(ref, dependent, where, tag) or dependent
    losses = [(x["rank"], row) for x in docs for row in x["losses"]]
    params = [(x["rank"], x["worst_param"]) for x in docs if x.get("worst_param")]
    worst = _worst(losses + params)
    if worst is not None:
        details["worst"] = dict(worst[1], rank=worst[0])
    bad = [(rk, row) for rk, row in losses + params if not row["ok"]]
    if bad:
        rk, row = worst or bad[0]
        n_bad = len({t for x in docs for t in x["bad_params"]})
        failed = Result("trial.distributed", "trial", "fail",
                      f"{where}: {row['tensor']} ({row['phase']}) differs from the one-process "
                      f"run on rank {rk} ({_how_far(row)}); {n_bad} of "
                      f"{details['tensors']} parameters differ" + tag, details=details,
                      fix="the per-rank outputs matched, so the reduction is wrong: a custom "
                          "gradient hook, a loss that is not a mean over the batch, or the "
                          "backend's all-reduce (neuron-env collectives)")
        return _coupled(ref, failed, where, tag) or failed
    w = details.get("worst") or {}
    return Result("trial.distributed", "trial", "pass",
                  f"{where}: loss and {details['tensors']} parameters after "
                  f"{details['steps']} step(s) match one process on the whole batch (worst "
                  f"{w.get('tensor')} on rank {w.get('rank')}, max |diff| "
                  f"{_g(w.get('max_abs'))}){_mode_note(ref, docs[0].get('unused'))}; "
                  f"{thr['samples_per_s']:.1f} samples/s, scaling "
                  f"efficiency {_pct(thr['scaling_efficiency'])}" + tag, details=details,
                  observed={"samples_per_s": round(thr["samples_per_s"], 3)})


def _coupled(ref: dict[str, Any], failed: Result, where: str, tag: str) -> Result | None:
    """#48.4: a model that couples the samples of a batch cannot equal one process under DDP
    by construction; when the one-process probe found why, the difference is a warn naming
    it, not a rank blamed. None when nothing couples the batch (the failure stands)."""
    c = ref.get("batch_coupled") or {}
    outs: dict[str, Any] = c.get("outputs") or {}
    bns = (c.get("batchnorm") or []) if c.get("batchnorm_train") else []
    if not outs and not bns:
        return None
    why = []
    if bns:
        why.append(f"{len(bns)} BatchNorm module(s) in train mode ({_few(bns)}) normalise "
                   "each rank's shard with that shard's own statistics")
    if outs:
        why.append(f"output(s) {_few(list(outs))} depend on the whole batch (in one process "
                   f"the first shard run alone differs from the whole batch's rows: "
                   f"{_probe(next(iter(outs.values())))})")
    w = (failed.details or {}).get("worst") or {}
    seen = f"{w.get('tensor')}, {w.get('phase')}, {_how_far(w)}" if w else "-"
    from neuron_env.util.record import replace

    return replace(
        failed, status="warn",
        summary=f"{where}: not comparable with one process by construction: "
                + "; ".join(why) + f"; the ranks differ as that predicts ({seen}); the "
                "all-reduce itself was not judged" + tag,
        fix=("use torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) so the ranks share "
             "batch statistics; " if bns else "")
            + ("compute batch-wide outputs (contrastive logits, in-batch losses) over the "
               "ranks' all-gathered embeddings; " if outs else "")
            + "or run trial on a model in eval mode to compare the rest")


def _few(names: list[str]) -> str:
    return ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")


def _probe(row: dict[str, Any]) -> str:
    if row.get("shape"):
        return f"shape {row['shape'][0]} alone, {row['shape'][1]} as rows of the whole batch"
    return f"max |diff| {_g(row.get('max_abs'))}"


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
    bns = (ref.get("batch_coupled") or {}).get("batchnorm") or []
    if stochastic and bns:
        out += (f"; in eval mode the {len(bns)} BatchNorm module(s) ({_few(bns)}) used their "
                "running statistics: training's batch statistics, which each rank would take "
                "from its own shard (SyncBatchNorm shares them), were not compared")
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
