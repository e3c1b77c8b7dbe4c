"""The light first half of a smoke run: check the options, find the target, start the smoke
script in it. The CLI calls this BEFORE importing the rest of neuron-env, so the target
interpreter (and its `import torch`) runs while neuron-env loads (as doctor's probe does)."""

from __future__ import annotations

from neuron_env.errors import UsageError
from neuron_env.guards import proc
from neuron_env.target_python import launch
from neuron_env.util.record import fields, record

DEFAULT_TIMEOUT = 300.0
DEVICES = ("neuron", "cpu", "cuda")


@record
class SmokeOptions:
    device: str = "neuron"
    size: int = 1024
    dtype: str = "float32"
    rtol: float | None = None
    atol: float | None = None
    iterations: int = 10
    backward: bool = False
    compile: bool = False
    no_fallback: bool = False
    timeout: float = DEFAULT_TIMEOUT
    seed: int = 0


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


def start(python: str, opts: SmokeOptions) -> proc.Running:
    """Start the smoke script in `python` (a resolved path); `runner.finish` collects it."""
    payload = {k: getattr(opts, k) for k in fields(opts) if k != "timeout"}
    return launch.spawn_script(python, "smoke.py", payload, timeout=opts.timeout)


def start_flag(python_flag: str | None, opts: SmokeOptions) -> tuple[str, str, proc.Running]:
    """Validate, resolve --python, start: (path, chosen_by, running)."""
    from neuron_env.probes.interpreter import resolve_target

    validate(opts)
    path, by = resolve_target(python_flag)
    return path, by, start(path, opts)
