"""`neuron-env smoke`, and the smoke.device check that `doctor --smoke` adds."""

from __future__ import annotations

from neuron_env.commands import TOOL
from neuron_env.report.model import Report, Result, exit_code
from neuron_env.smoke.runner import SmokeRun, finish, run, worst
from neuron_env.smoke.start import SmokeOptions, start_flag

SCHEMA = "neuron-env.smoke/1"


def smoke(python: str | None, opts: SmokeOptions, started=None, live=None) -> Report:
    """`started`: (path, chosen_by, running) from smoke.start.start_flag, already running;
    `live`: smoke.live.StepLines to say each step on stderr as it starts."""
    path, by, running = started or start_flag(python, opts)
    sr = finish(path, opts, running, live)
    return Report(schema=SCHEMA, tool=TOOL, matrix=None,
                  target={"interpreter": {"path": path, "chosen_by": by},
                          "device": opts.device, "emulated": sr.emulated, **sr.info},
                  results=sr.results, exit_code=exit_code(sr.results),
                  extra={"elapsed_s": round(sr.elapsed, 3), "emulated": sr.emulated})


def device_check(python_path: str, opts: SmokeOptions | None = None, live=None) -> Result:
    """doctor --smoke: the whole smoke run as one `smoke.device` result (`live`: as smoke's)."""
    sr: SmokeRun = run(python_path, opts or SmokeOptions(size=256, iterations=5), live)
    status = worst(sr.results)
    bad = [r for r in sr.results if r.status in ("fail", "error")]
    main = bad[0] if bad else next((r for r in sr.results if r.id == "smoke.matmul"),
                                   sr.results[-1])
    from neuron_env.checks.device import SMOKE

    return SMOKE.result(status, main.summary, fix=main.fix,
                        timed_out=any(r.timed_out for r in sr.results),
                        details={"emulated": sr.emulated,
                                 "steps": [r.serialize() for r in sr.results], **sr.info})
