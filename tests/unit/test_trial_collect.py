"""Issue #36 item 11: `trial --world-size N --collect RUN_DIR` reads files other processes wrote.
A valid run directory (the fields inside/trial_dist.py writes) gives a pass; each hostile
variant is one clear error (BadInput, exit 2): never a hang (FIFO), a MemoryError (/dev/zero),
a traceback (deep JSON, wrong types) or a false pass (rank 0 `{}`, world sizes that disagree,
forged or duplicate ranks, a 200% scaling efficiency, NaN step times)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from neuron_env.errors import EXIT_CONFIG, BadInput
from neuron_env.trial import distributed as dist
from neuron_env.trial.distributed.runner import _port

WORLD = 2
ROW = {"ok": True, "max_abs": 1e-7, "excess": 0.01, "mismatched": 0, "numel": 10}


def reference_doc() -> dict:
    return {"batch": 32, "per_rank_batch": 16, "one_rank_step_s": 0.01,
            "whole_batch_step_s": 0.018, "tensors": 6, "device": "cpu", "torch": "2.13.0",
            "emulated": False}


def rank_doc(r: int) -> dict:
    return {"rank": r, "world_size": WORLD, "pid": 100 + r, "host": "h", "device": "cpu",
            "emulated": False, "torch": "2.13.0", "initial": [],
            "outputs": [dict(ROW, tensor="output", phase="step 1")],
            "losses": [dict(ROW, tensor="loss", phase="step 1", value=2.3, reference=2.3)],
            "params_checked": 6, "worst_param": dict(ROW, tensor="0.weight", phase="after"),
            "bad_params": [], "first_step_s": 0.2, "step_s": 0.011, "shard": [16 * r, 16 * r + 16]}


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "reference.json").write_text(json.dumps(reference_doc()))
    (run / "reference.steps").write_text("step reference timing\n")
    for r in range(WORLD):
        (run / f"rank{r}.json").write_text(json.dumps(rank_doc(r)))
        (run / f"rank{r}.steps").write_text("call finish\n")
    return run


def collect(run: Path):
    d = dist.DistOptions(world_size=WORLD)
    return dist.verdict(dist.collect(str(run), d), d, 60.0, "gloo")


def test_a_valid_run_directory_passes(tmp_path):
    res = collect(make_run(tmp_path))
    assert res.status == "pass", res.summary


def _edit(name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def do(run: Path) -> None:
        doc = json.loads((run / name).read_text())
        change(doc)
        (run / name).write_text(json.dumps(doc))  # NaN is written as the bare word NaN
    return do


def _replace(name: str, text: str) -> Callable[[Path], None]:
    return lambda run: (run / name).write_text(text)


def _fifo(name: str) -> Callable[[Path], None]:
    def do(run: Path) -> None:
        (run / name).unlink()
        os.mkfifo(run / name)
    return do


def _zero(name: str) -> Callable[[Path], None]:
    def do(run: Path) -> None:
        (run / name).unlink()
        (run / name).symlink_to("/dev/zero")
    return do


HOSTILE = {
    "rank 0 is {}": (_replace("rank0.json", "{}"), "has no `rank`"),
    "world sizes disagree": (_edit("rank1.json", lambda d: d.update(world_size=3)),
                             "world size 3"),
    "a duplicate rank": (_replace("rank1.json", json.dumps(rank_doc(0))), "says rank 0"),
    "a forged rank number": (_edit("rank1.json", lambda d: d.update(rank=7)), "says rank 7"),
    "a forged shard": (_edit("rank1.json", lambda d: d.update(shard=[0, 16])), "shard"),
    "a NaN step time": (_edit("rank0.json", lambda d: d.update(step_s=float("nan"))),
                        "finite number"),
    "an infinite step time": (_edit("rank1.json", lambda d: d.update(step_s=float("inf"))),
                              "finite number"),
    "a NaN reference time": (_edit("reference.json",
                                   lambda d: d.update(one_rank_step_s=float("nan"))),
                             "finite number"),
    "losses of the wrong type": (_edit("rank0.json", lambda d: d.update(losses="x")),
                                 "not list"),
    "a row of the wrong type": (_edit("rank0.json", lambda d: d.update(losses=[1])),
                                "not an object"),
    "batch a string": (_edit("reference.json", lambda d: d.update(batch="32")), "not int"),
    "deep JSON": (_replace("rank0.json", "[" * 100_000 + "]" * 100_000), "nested"),
    "a FIFO rank file": (_fifo("rank0.json"), "FIFO"),
    "a FIFO reference": (_fifo("reference.json"), "FIFO"),
    # a link is never followed (#45): refused as a link, its target never read or shown
    "rank file is /dev/zero": (_zero("rank1.json"), "symbolic link"),
    "a 400-digit batch": (_edit("reference.json", lambda d: d.update(batch=10 ** 400)),
                          "finite"),
    "not JSON": (_replace("rank0.json", "garbage"), "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_run_directory_is_one_clear_error(tmp_path, case):
    run = make_run(tmp_path)
    change, says = HOSTILE[case]
    change(run)
    with pytest.raises(BadInput) as e:
        collect(run)
    assert says in str(e.value) and e.value.exit_code == EXIT_CONFIG, str(e.value)


def test_a_200_percent_efficiency_is_never_a_pass(tmp_path):
    """A forged step time claims it (a real run on a loaded host can too: a warn, not a pass)."""
    from neuron_env.trial.dist_command import CostOptions, run
    from neuron_env.trial.options import TrialOptions

    path = make_run(tmp_path)
    for r in range(WORLD):
        _edit(f"rank{r}.json", lambda d: d.update(step_s=0.005))(path)
    rep = run("python3", "flag", TrialOptions(model="builtin:mlp", device="cpu"),
              dist.DistOptions(world_size=WORLD), CostOptions(price_per_hour=1.0,
                                                              collect=str(path)))
    main = rep.results[0]
    assert main.status == "warn" and "scaling efficiency of 200%" in main.summary, main.summary
    assert rep.exit_code == 0 and collect(path).status == "pass"  # the verdict alone


def test_fifos_among_the_progress_files_are_not_read(tmp_path):
    run = make_run(tmp_path)
    for name in ("rank0.steps", "rank1.error"):
        if (run / name).exists():
            (run / name).unlink()
        os.mkfifo(run / name)
    res = collect(run)  # returns at once: a FIFO there is as good as no file
    assert res.status == "fail" or res.status == "pass"


def test_a_rendezvous_port_in_use_is_named_before_any_rank_starts(monkeypatch):
    import socket

    from neuron_env.errors import UsageError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        monkeypatch.setenv(dist.PORT_VAR, str(s.getsockname()[1]))
        with pytest.raises(UsageError, match="already in use") as e:
            _port()
        assert "rank" not in e.value.message.split("no rank")[0]
    monkeypatch.setenv(dist.PORT_VAR, "29500x")
    with pytest.raises(UsageError, match="not a TCP port"):
        _port()
