"""`neuron-env collectives`: options -> target's device count -> ranks -> Results -> Report.

Locally neuron-env starts and supervises the ranks itself; with `--launched` it is ONE rank
started by torchrun or srun (see collectives/launch.py) and rank 0 reports for all."""

from __future__ import annotations

import os
import shutil
import sys

from neuron_env.collectives import launch, results, runner
from neuron_env.collectives.options import BACKENDS, CollectivesOptions, validate
from neuron_env.commands import TOOL
from neuron_env.probes.interpreter import resolve_target
from neuron_env.report.envelope import envelope
from neuron_env.report.model import Document, Report, exit_code

SCHEMA = "neuron-env.collectives/1"


def launched_rank() -> int:
    """This process's rank under torchrun (RANK) or srun (SLURM_PROCID)."""
    return int(os.environ.get("RANK") or os.environ.get("SLURM_PROCID") or 0)


def world_size(python: str, o: CollectivesOptions) -> tuple[int, str | None]:
    """--world-size, else one rank per visible device; (2 on the CPU or an emulated device)."""
    if o.world_size:
        return o.world_size, None
    count, emulated = runner.probe_devices(python, o.device)
    if o.device == "cpu" or (emulated and count < 2):
        return 2, f"{'CPU' if o.device == 'cpu' else 'emulated device'}: 2 ranks by default"
    if count < 1:
        return 1, f"the target's torch sees no {o.device} device"
    return count, f"one rank per visible {o.device} device ({count})"


def run(python: str | None, o: CollectivesOptions, launched: bool = False) -> Report:
    validate(o)
    path, by = resolve_target(python)
    backend = o.backend or BACKENDS[o.device]
    note: str | None
    if launched:
        world, note = int(os.environ.get("WORLD_SIZE") or
                          os.environ.get("SLURM_NTASKS") or 1), "launched by torchrun/srun"
        run_ = runner.run_one(path, o.payload(backend), o.timeout)
    else:
        world, note = world_size(path, o)
        run_ = runner.launch(path, o.payload(backend), world, o.timeout)
    rows = (run_.doc or {}).get("rows") or []
    res = [results.launch_result(run_, world, backend, o.device, o.timeout)]
    if run_.doc:
        res += results.op_results(rows, o.ops)
    doc = run_.doc or {}
    target = {"interpreter": {"path": path, "chosen_by": by}, "device": o.device,
              "backend": backend, "world_size": world, "world_size_from": note,
              "torch": doc.get("torch"), "emulated": bool(doc.get("emulated"))}
    return Report(schema=SCHEMA, tool=TOOL, matrix=None, target=target, results=tuple(res),
                  exit_code=exit_code(res), view=text_view,
                  extra={"rows": rows, "options": o.payload(backend),
                         "elapsed_s": round(run_.elapsed, 3)})


def text_view(rep: Report, verbose: bool = False, colour: bool = False) -> str:
    from neuron_env.report import text

    t = rep.target
    head = (f"collectives: {t['world_size']} ranks, backend {t['backend']} on {t['device']}"
            + (" [EMULATED]" if t.get("emulated") else "") + "\n")
    rows = rep.extra.get("rows") or []
    return head + (results.table(rows) + "\n" if rows else "") + text.render(
        rep, verbose=verbose, colour=colour)


def launch_doc(kind: str, python: str | None, o: CollectivesOptions, nodes: int,
               nproc: int | None) -> Document:
    validate(o)
    from neuron_env.target_python.launch import module_line

    # neuron-env on PATH, else this interpreter through the one module-line builder (never
    # `python -m`: the cwd where the operator pastes the line is not on sys.path, #45)
    found = shutil.which("neuron-env")
    me = (found,) if found else module_line(sys.executable, "neuron_env")
    script = launch.render(kind, me, python, o, nodes, nproc)
    return Document(envelope("neuron-env.collectives-launch/1", 0, launcher=kind,
                             nodes=nodes, script=script), lambda b: b["script"])


def device_check(python_path: str, timeout: float = 300.0, device: str = "neuron"):
    """`doctor --smoke --collectives`: a short all_reduce across the local ranks as ONE
    result, `collectives.all_reduce`, with the launch result folded in when it failed."""
    o = CollectivesOptions(device=device, ops=("all_reduce",), sizes=(8, 64 << 10, 1 << 20),
                           iterations=3, timeout=timeout)
    rep = run(python_path, o)
    by_id = {r.id: r for r in rep.results}
    main = by_id.get("collectives.all_reduce") or by_id["collectives.launch"]
    if by_id["collectives.launch"].status != "pass":
        main = by_id["collectives.launch"]
    from neuron_env.checks.device import ALL_REDUCE
    from neuron_env.util.record import replace

    t = rep.target
    return replace(main, id=ALL_REDUCE.id, category=ALL_REDUCE.category,
                   summary=f"{t['world_size']} ranks ({t['backend']}): {main.summary}", details={
        **(main.details or {}), "world_size": rep.target["world_size"],
        "backend": rep.target["backend"], "rows": rep.extra["rows"]})
