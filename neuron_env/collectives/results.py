"""Pure: a supervised run -> Results (collectives.launch, one collectives.<op> per op) and the
nccl-tests style table. Bandwidths as nccl-tests defines them: algbw = size / time;
busbw = algbw x the op's factor (all_reduce 2(n-1)/n; all_gather, reduce_scatter,
all_to_all (n-1)/n; broadcast, send_recv 1); GB/s = 10^9 bytes per second."""

from __future__ import annotations

from neuron_env.collectives.runner import CollectivesRun, RankOutcome
from neuron_env.report.model import Result

DOCS = "https://github.com/NVIDIA/nccl-tests/tree/master/doc"  # its performance notes


def human(n: int) -> str:
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def _where(r: RankOutcome) -> str:
    op, _, size = r.last_step.partition(":")
    return f"{op} at {human(int(size))}" if size.isdigit() else r.last_step


def launch_result(run: CollectivesRun, world: int, backend: str, device: str,
                  timeout: float) -> Result:
    doc = run.doc or {}
    if run.timed_out:
        stuck = [r for r in run.ranks if not r.entered]
        inside = [r for r in run.ranks if r.entered]
        if stuck and inside:
            why = (f"rank {', '.join(str(r.rank) for r in stuck)} never entered "
                   f"{_where(stuck[0])}; rank {', '.join(str(r.rank) for r in inside)} waited "
                   "inside it")
        else:
            why = f"every rank was stuck in {_where(run.ranks[0])}" if run.ranks else "no rank"
        return Result("collectives.launch", "collectives", "fail",
                      f"timed out after {timeout:g}s: {why} (every rank was killed)",
                      timed_out=True, details={"ranks": _ranks(run)},
                      fix="a rank that never enters a collective is hung before it (device, "
                          "compile); one stuck inside waits for a peer or the network: see "
                          "doctor's driver.cores and net.efa")
    if run.stopped_after is not None or doc == {}:
        return _died(run)
    return Result("collectives.launch", "collectives", "pass",
                  f"{world} ranks, backend {backend} on {device}"
                  + (" [EMULATED]" if doc.get("emulated") else "")
                  + f", torch {doc.get('torch')}", observed={"world_size": world,
                                                               "backend": backend})


def _died(run: CollectivesRun) -> Result:
    """Name the rank that died first: among ranks seen exiting at once, a hard crash (no
    Python error: a signal, os._exit) before those that only lost their peer."""
    order = {r: i for i, batch in enumerate(run.exit_order) for r in batch}
    dead = sorted((r for r in run.ranks if r.returncode not in (0, None) and not r.killed),
                  key=lambda r: (order.get(r.rank, len(order)), r.error is not None))
    first = dead[0] if dead else (run.ranks[0] if run.ranks else None)
    if first is None:
        return Result("collectives.launch", "collectives", "error", "no rank ran")
    how = (f"signal {-first.returncode}" if first.returncode and first.returncode < 0 else
           f"exit {first.returncode}")
    why = (first.error.strip().splitlines()[-1] if first.error else
           "no Python error: it was killed or exited hard (see details.ranks[].stderr_tail)")
    after = [str(r.rank) for r in dead[1:]]
    return Result("collectives.launch", "collectives", "fail",
                  f"rank {first.rank} died ({how}) during {_where(first)}: {why}"
                  + (f"; then rank {', '.join(after)} failed" if after else ""),
                  details={"ranks": _ranks(run)},
                  fix="read the rank's error above; the other ranks were stopped")


def _ranks(run: CollectivesRun) -> list[dict]:
    return [{"rank": r.rank, "returncode": r.returncode, "killed": r.killed,
             "last_step": r.last_step, "inside_collective": r.entered, "error": r.error,
             "stderr_tail": r.stderr_tail, "pid": r.pid}
            for r in run.ranks]


def op_results(rows: list[dict], ops: tuple[str, ...]) -> list[Result]:
    out = []
    for op in ops:
        mine = [r for r in rows if r["op"] == op]
        ran = [r for r in mine if "skipped" not in r]
        if not ran:
            why = mine[0]["skipped"] if mine else "not run"
            out.append(Result(f"collectives.{op}", "collectives", "skip", f"{op}: {why}"))
            continue
        out.append(_op_result(op, ran, len(mine) - len(ran)))
    return out


def _op_result(op: str, ran: list[dict], skipped: int) -> Result:
    wrong = [r for r in ran if r["wrong"]]
    best = max(ran, key=lambda r: r["busbw_gbps"])
    observed = {"peak_busbw_gbps": round(best["busbw_gbps"], 3),
                "at_size_bytes": best["size_bytes"], "wrong": sum(r["wrong"] for r in ran)}
    if wrong:
        sus = sorted({s for r in wrong for s in r.get("suspect_ranks", [])})
        got = sorted({s for r in wrong for s in r.get("wrong_ranks", [])})
        return Result(f"collectives.{op}", "collectives", "fail",
                      f"{op}: {observed['wrong']} wrong elements at "
                      f"{', '.join(human(r['size_bytes']) for r in wrong)}; wrong on rank "
                      f"{', '.join(map(str, got))}"
                      + (f"; data from rank {', '.join(map(str, sus))} arrived wrong"
                         if sus else ""), observed=observed, expected={"wrong": 0},
                      fix="results differ from the exact expected values: a device, driver "
                          "or runtime fault (doctor: driver.versions, backend.collectives)")
    note = f" ({skipped} size(s) too small for the world size)" if skipped else ""
    return Result(f"collectives.{op}", "collectives", "pass",
                  f"{op}: {len(ran)} sizes exact; peak busbw {best['busbw_gbps']:.3g} GB/s at "
                  f"{human(best['size_bytes'])}{note}", observed=observed, docs=DOCS)


def table(rows: list[dict]) -> str:
    head = (f"{'op':<15}{'size (B)':>12}{'count':>12}{'type':>10}{'time (us)':>12}"
            f"{'algbw GB/s':>12}{'busbw GB/s':>12}{'#wrong':>8}")
    lines = [head]
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['op']:<15}{r['size_bytes']:>12}{r['count']:>12}{r['dtype']:>10}"
                         f"{'skipped':>12}")
            continue
        lines.append(f"{r['op']:<15}{r['size_bytes']:>12}{r['count']:>12}{r['dtype']:>10}"
                     f"{r['time_us']:>12.1f}{r['algbw_gbps']:>12.3f}{r['busbw_gbps']:>12.3f}"
                     f"{r['wrong']:>8}")
    return "\n".join(lines) + "\n"
