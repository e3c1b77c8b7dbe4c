"""`neuron-env smoke`, and the smoke.device check that `doctor --smoke` adds."""

from __future__ import annotations

from neuron_env.commands import TOOL
from neuron_env.errors import UsageError
from neuron_env.probes.interpreter import resolve_target
from neuron_env.report.model import Report, Result, exit_code
from neuron_env.smoke.runner import SmokeOptions, SmokeRun, run, worst

SCHEMA = "neuron-env.smoke/1"
DEVICES = ("neuron", "cpu", "cuda")


def validate(opts: SmokeOptions) -> None:
    if opts.device not in DEVICES:
        raise UsageError(f"--device {opts.device!r}: expected one of {', '.join(DEVICES)}")
    if opts.dtype not in ("float32", "bfloat16"):
        raise UsageError(f"--dtype {opts.dtype!r}: expected float32 or bfloat16")
    if opts.size < 1 or opts.iterations < 1 or opts.timeout <= 0:
        raise UsageError("--size, --iterations and --timeout must be positive")
    for name in ("rtol", "atol"):
        v = getattr(opts, name)
        if v is not None and v < 0:
            raise UsageError(f"--{name} must not be negative")


def smoke(python: str | None, opts: SmokeOptions) -> Report:
    validate(opts)
    path, by = resolve_target(python)
    sr = run(path, opts)
    return Report(schema=SCHEMA, tool=TOOL, matrix=None,
                  target={"interpreter": {"path": path, "chosen_by": by},
                          "device": opts.device, "emulated": sr.emulated, **sr.info},
                  results=sr.results, exit_code=exit_code(sr.results),
                  extra={"elapsed_s": round(sr.elapsed, 3), "emulated": sr.emulated})


def device_check(python_path: str, opts: SmokeOptions | None = None) -> Result:
    """doctor --smoke: the whole smoke run as one `smoke.device` result."""
    sr: SmokeRun = run(python_path, opts or SmokeOptions(size=256, iterations=5))
    status = worst(sr.results)
    bad = [r for r in sr.results if r.status in ("fail", "error")]
    main = bad[0] if bad else next((r for r in sr.results if r.id == "smoke.matmul"),
                                   sr.results[-1])
    return Result("smoke.device", "smoke", status, main.summary, fix=main.fix,
                  timed_out=any(r.timed_out for r in sr.results),
                  details={"emulated": sr.emulated,
                           "steps": [r.serialize() for r in sr.results], **sr.info})
