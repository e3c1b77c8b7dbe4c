"""`trial --world-size N --collect RUN_DIR`: the files a run launched elsewhere left behind,
read by the one opener of a shared directory (guards/files.open_dir/read_json_at: the directory
judged by guards/trust, each file O_NOFOLLOW relative to it, regular files of this user only,
capped, depth-limited) and checked before any verdict is made from them. RUN_DIR is written
by other processes, often on a shared file system: a missing field, a wrong type, a NaN step
time, a rank file that claims another rank or another world size, shards that do not tile the
batch, or a throughput no run can reach is one clear error (exit 2), never a traceback and
never a pass (issue #36, item 11).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from neuron_env.errors import BadInput
from neuron_env.guards.files import field, number, read_json_at
from neuron_env.report import noise

MAX_EFFICIENCY = 1.5  # thr_N / (N * thr_1): 1.0 is perfect scaling; 2.0 is a forged file
_ROW = (("ok", "bool", False), ("tensor", "str", False), ("phase", "str", False),
        ("max_abs", "number", True), ("excess", "any_number", False),
        ("mismatched", "int", False), ("numel", "int", False))

MAX_RANK_FILE = 16 * 1024 * 1024  # a rank's verdict: a row per parameter tensor
MAX_SAMPLES = 1000  # a rank's timed steps kept (inside/_trial_device.MAX_SAMPLES)
MAX_STEP_S = 86400.0  # one step longer than a day is not a timing


def step_samples(doc: dict[str, Any], what: str) -> list[float] | None:
    """doc's `step_samples_s` (every timed step, #49 section 4), checked: a list of at most
    MAX_SAMPLES finite numbers in [0, MAX_STEP_S]; None when absent (a file of an older
    neuron-env). Anything else is BadInput naming the file, the field and the item."""
    raw = field(doc, "step_samples_s", "list", what, optional=True)
    if raw is None:
        return None
    if len(raw) > MAX_SAMPLES:
        raise BadInput(f"{what}: `step_samples_s` holds {len(raw)} samples, more than the "
                       f"{MAX_SAMPLES} a run records")
    out = []
    for i, v in enumerate(raw):
        num = number(v) if not isinstance(v, str) else math.nan
        if not 0 <= num <= MAX_STEP_S:  # NaN and +-inf fail this too
            raise BadInput(f"{what}: `step_samples_s[{i}]` is {str(v)[:40]!r}: a step time in "
                           f"seconds (a finite number in [0, {MAX_STEP_S:g}]) is expected")
        out.append(num)
    return out


def checked_samples(doc: dict[str, Any]) -> list[float] | None:
    """step_samples without the error: None for samples that do not pass (a rank file of a
    local run, parsed but not judged by rank(): its spread is then not shown, never made up)."""
    try:
        return step_samples(doc, "rank file")
    except BadInput:
        return None


def timing(samples: list[float]) -> dict[str, Any]:
    """The one-process trial's timing record (report/noise.spread's input) of step times."""
    return {"median_s": statistics.median(samples), "min_s": min(samples),
            "max_s": max(samples), "stdev_s": statistics.pstdev(samples),
            "iterations": len(samples), "samples_s": samples}


def run_samples(ranks: list[dict[str, Any]]) -> list[float] | None:
    """The run's step times: step i took as long as its slowest rank (the collectives make
    the others wait). None unless every rank recorded samples (an older rank file)."""
    lists = [x.get("step_samples_s") for x in ranks]
    if not lists or not all(isinstance(x, list) and x for x in lists):
        return None
    return [max(col) for col in zip(*lists, strict=False)][:MAX_SAMPLES]


def throughput(ref: dict, ranks: list[dict], world: int) -> dict[str, Any]:
    """samples/s across ranks (the slowest rank's median step sets the pace) and scaling
    efficiency vs one rank on the same per-rank batch: thr_N / (N * thr_1)."""
    batch, per = int(ref["batch"]), int(ref["per_rank_batch"])
    step = max(float(x["step_s"]) for x in ranks)
    thr = batch / step if step > 0 else 0.0
    one = per / ref["one_rank_step_s"] if ref.get("one_rank_step_s") else 0.0
    samples = run_samples(ranks)
    spread = noise.spread(timing(samples)) if samples else None
    return {"global_batch": batch, "per_rank_batch": per, "step_s": step,
            "step_samples_s": samples, "spread": spread, "samples_per_s": thr,
            "one_rank_samples_per_s": one,
            "scaling_efficiency": thr / (world * one) if one else None,
            "emulated": bool(ref.get("emulated"))}



def _rows(doc: dict[str, Any], key: str, what: str) -> None:
    rows = field(doc, key, "list", what)
    for i, row in enumerate(rows):
        for name, kind, optional in _ROW:
            field(row, name, kind, f"{what} `{key}[{i}]`", optional=optional, lo=0)


def reference(dir_fd: int, run_dir: str) -> dict[str, Any]:
    """reference.json in the run directory `dir_fd` (guards/files.open_dir): read by
    guards/files.read_json_at (relative, O_NOFOLLOW: a link is refused, never followed)."""
    what = f"--collect: {Path(run_dir) / 'reference.json'}"
    doc = read_json_at(dir_fd, "reference.json", MAX_RANK_FILE, what, finite=False)
    batch = field(doc, "batch", "int", what, lo=1)
    per = field(doc, "per_rank_batch", "int", what, lo=1, hi=batch)
    field(doc, "one_rank_step_s", "number", what, lo=0)
    field(doc, "whole_batch_step_s", "number", what, lo=0)
    field(doc, "tensors", "int", what, lo=0)
    for key in ("device", "torch"):
        field(doc, key, "str", what)
    field(doc, "emulated", "bool", what)
    if batch % per:
        raise BadInput(f"{what}: per_rank_batch {per} does not divide the batch {batch}")
    return doc


def rank(dir_fd: int, run_dir: str, expect: int, world: int,
         ref: dict[str, Any]) -> dict[str, Any]:
    """rank<expect>.json, which must say it is rank `expect` of `world` and hold its shard."""
    what = f"--collect: {Path(run_dir) / f'rank{expect}.json'}"
    doc = read_json_at(dir_fd, f"rank{expect}.json", MAX_RANK_FILE, what, finite=False)
    got = field(doc, "rank", "int", what, lo=0)
    if got != expect:
        raise BadInput(f"{what}: says rank {got}, but it is rank {expect}'s file: a copied or "
                       "forged rank file")
    size = field(doc, "world_size", "int", what, lo=1)
    if size != world:
        raise BadInput(f"{what}: written by a run of world size {size}, not --world-size "
                       f"{world}: the files in RUN_DIR come from different runs")
    for key in ("host", "device", "torch"):
        field(doc, key, "str", what)
    field(doc, "emulated", "bool", what)
    field(doc, "pid", "int", what, lo=0, optional=True)
    field(doc, "first_step_s", "number", what, lo=0)
    step = field(doc, "step_s", "number", what, lo=0)
    if step <= 0:
        raise BadInput(f"{what}: `step_s` is {step}: a step takes some time")
    step_samples(doc, what)
    field(doc, "params_checked", "int", what, lo=0)
    for key in ("initial", "outputs", "losses"):
        _rows(doc, key, what)
    if not doc["losses"]:
        raise BadInput(f"{what}: `losses` is empty: the rank ran no step")
    worst = field(doc, "worst_param", "dict", what, optional=True)
    if worst is not None:
        for name, kind, optional in _ROW:
            field(worst, name, kind, f"{what} `worst_param`", optional=optional, lo=0)
    bad = field(doc, "bad_params", "list", what)
    if not all(isinstance(x, str) for x in bad):
        raise BadInput(f"{what}: `bad_params` must be a list of tensor names")
    shard = field(doc, "shard", "list", what)
    per = int(ref["per_rank_batch"])
    if shard != [expect * per, (expect + 1) * per]:
        raise BadInput(f"{what}: shard {shard!r} is not rank {expect}'s slice "
                       f"[{expect * per}, {(expect + 1) * per}) of the batch")
    return doc


def plausible(ref: dict[str, Any], docs: list[dict[str, Any]], world: int) -> str | None:
    """The figures must be ones a run can produce: an inconsistent batch or step count is an
    error; a scaling efficiency above MAX_EFFICIENCY is a note (the verdict becomes `warn`, never
    `pass`): a forged file claims it, but so does a real run whose one-rank timing was taken on
    a loaded host (measured: 12% to 357% for the same tiny run on a busy 2-core machine)."""
    if int(ref["batch"]) != world * int(ref["per_rank_batch"]):
        raise BadInput(f"--collect: reference.json's batch {ref['batch']} is not --world-size "
                       f"{world} x per_rank_batch {ref['per_rank_batch']}")
    steps = {len(d["losses"]) for d in docs}
    if len(steps) > 1:
        raise BadInput(f"--collect: the ranks ran different numbers of steps ({sorted(steps)})")
    eff = throughput(ref, docs, world).get("scaling_efficiency")
    if eff is not None and eff > MAX_EFFICIENCY:
        return (f"a scaling efficiency of {eff * 100:.0f}% (above {MAX_EFFICIENCY * 100:.0f}%) "
                "is not one N ranks reach: the step times in RUN_DIR are not comparable (files "
                "from different runs or hosts, a loaded host, or edited)")
    return None
