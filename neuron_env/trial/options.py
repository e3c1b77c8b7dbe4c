"""The trial's options and their validation (pure: no I/O but a file-exists check)."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass

from neuron_env.errors import UsageError

DEVICES = ("neuron", "cpu", "cuda")
DTYPES = ("float32", "bfloat16")
DEFAULT_TIMEOUT = 600.0
BUILTINS = ("mlp", "conv", "transformer-block", "embedding")  # inside/trial.py builds them
MAX_BASELINE = 8 * 1024 ** 3  # a tensor baseline; a larger file is not one
_MODEL = re.compile(r"^(builtin:[\w-]+|[\w.]+:[\w.]+|.+\.py:[\w.]+)$")


@dataclass(frozen=True)
class TrialOptions:
    model: str
    device: str = "neuron"
    dtype: str = "float32"
    autocast: bool = False
    rtol: float | None = None
    atol: float | None = None
    steps: int = 0
    lr: float = 0.01
    iterations: int = 10
    compile: bool = False
    compile_backend: str | None = None
    shapes: tuple[tuple[int, ...], ...] = ()
    batch_sizes: tuple[int, ...] = ()
    save_baseline: str | None = None
    baseline: str | None = None
    no_fallback: bool = False
    inference: bool = False
    generate: int = 0
    seed: int = 0
    timeout: float = DEFAULT_TIMEOUT

    def payload(self) -> dict:
        """What the inside script reads (paths made absolute: it may run elsewhere)."""
        d = {k: v for k, v in asdict(self).items() if k != "timeout"}
        for k in ("save_baseline", "baseline"):
            if d[k]:
                d[k] = os.path.abspath(d[k])
        if d["model"].split(":", 1)[0].endswith(".py"):
            path, _, attr = d["model"].rpartition(":")
            d["model_id"] = f"{os.path.basename(path)}:{attr}"  # the same on every host
            d["model"] = f"{os.path.abspath(path)}:{attr}"
        return d



_O = TrialOptions  # the model options' defaults are TrialOptions' (declared there, once)


@dataclass(frozen=True)
class TrialFlags:
    """trial's command line as one typed record, one field per parameter: THE declaration of
    its defaults (typer's options in cli/trial.py take theirs from here; the model's options
    from TrialOptions). commands/trial.py `run_flags` turns it into the run."""

    model: str
    python: str | None = None
    device: str = _O.device
    dtype: str = _O.dtype
    autocast: bool = _O.autocast
    rtol: float | None = _O.rtol
    atol: float | None = _O.atol
    steps: int = _O.steps
    lr: float = _O.lr
    iterations: int = _O.iterations
    compile: bool = _O.compile
    compile_backend: str | None = _O.compile_backend
    shapes: str | None = None  # as given: 8x128,16x128 (parse_shapes)
    batch_sizes: str | None = None  # as given: 8,16,32 (parse_sizes)
    save_baseline: str | None = _O.save_baseline
    baseline: str | None = _O.baseline
    no_fallback: bool = _O.no_fallback
    inference: bool = _O.inference
    generate: int = _O.generate
    seed: int = _O.seed
    timeout: float = _O.timeout
    world_size: int | None = None  # a distributed trial: N ranks
    strategy: str = "ddp"  # with --world-size: ddp | fsdp2
    nnodes: int = 1
    print_launch: str | None = None  # with --world-size: torchrun | srun
    collect: str | None = None  # with --world-size: a launched run's RUN_DIR
    price_per_hour: float | None = None
    instance_type: str | None = None
    region: str | None = None
    aws: bool = False
    format: str = "text"
    report: tuple[str, ...] = ()  # --report FORMAT:PATH
    verbose: bool = False

    def options(self) -> TrialOptions:
        """The model's options (the shapes and sizes parsed: a bad one is exit 2)."""
        return TrialOptions(
            model=self.model, device=self.device, dtype=self.dtype, autocast=self.autocast,
            rtol=self.rtol, atol=self.atol, steps=self.steps, lr=self.lr,
            iterations=self.iterations, compile=self.compile,
            compile_backend=self.compile_backend, shapes=parse_shapes(self.shapes),
            batch_sizes=parse_sizes(self.batch_sizes), save_baseline=self.save_baseline,
            baseline=self.baseline, no_fallback=self.no_fallback, seed=self.seed,
            timeout=self.timeout, inference=self.inference, generate=self.generate)


def parse_shapes(text: str | None) -> tuple[tuple[int, ...], ...]:
    """'8x128,16x128' -> ((8, 128), (16, 128))."""
    out = []
    for part in (text or "").split(","):
        part = part.strip().lower()
        if not part:
            continue
        try:
            dims = tuple(int(d) for d in part.split("x"))
        except ValueError:
            raise UsageError(f"--shapes {text!r}: {part!r} is not a shape like 8x128",
                             hint="e.g. --shapes 8x128,16x128,32x128") from None
        if any(d < 1 for d in dims):
            raise UsageError(f"--shapes {text!r}: dimensions must be positive")
        out.append(dims)
    return tuple(out)


def parse_sizes(text: str | None) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in (text or "").split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--batch-sizes {text!r}: expected integers like 8,16,32") from None
    if any(s < 1 for s in sizes):
        raise UsageError(f"--batch-sizes {text!r}: sizes must be positive")
    return sizes


def validate(o: TrialOptions) -> None:
    if not _MODEL.match(o.model):
        raise UsageError(f"MODEL {o.model!r}: expected module:callable, path/to/file.py:callable "
                         "or builtin:NAME", hint="e.g. neuron-env trial builtin:mlp, or "
                         "neuron-env trial mypkg.models:make_trial")
    name = o.model.split(":", 1)[1] if o.model.startswith("builtin:") else None
    if name is not None and name not in BUILTINS:
        raise UsageError(f"MODEL {o.model!r}: no built-in workload {name!r}",
                         hint="built-ins: " + ", ".join(f"builtin:{b}" for b in BUILTINS))
    if o.device not in DEVICES:
        raise UsageError(f"--device {o.device!r}: expected one of {', '.join(DEVICES)}")
    if o.dtype not in DTYPES:
        raise UsageError(f"--dtype {o.dtype!r}: expected float32 or bfloat16")
    if o.iterations < 1 or o.timeout <= 0 or o.steps < 0 or o.lr <= 0:
        raise UsageError("--iterations and --timeout must be positive, --steps not negative, "
                         "--lr positive")
    for name in ("rtol", "atol"):
        v = getattr(o, name)
        if v is not None and v < 0:
            raise UsageError(f"--{name} must not be negative")
    if o.generate < 0:
        raise UsageError("--generate must not be negative")
    if o.inference and o.steps:
        raise UsageError("--inference and --steps: --inference runs no backward and no "
                         "optimizer", hint="drop --steps, or drop --inference to train")
    if o.shapes and o.batch_sizes:
        raise UsageError("--shapes and --batch-sizes: give one of them")
    if o.save_baseline and o.baseline:
        raise UsageError("--save-baseline and --baseline: give one of them",
                         hint="save on the environment used today, compare on the Trainium host")
    if o.baseline:  # the one reader's check: a FIFO or /dev/zero is refused here, never read
        from neuron_env.guards.files import check_regular

        check_regular(o.baseline, MAX_BASELINE, f"--baseline {o.baseline}")
    path = o.model.rpartition(":")[0]
    if path.endswith(".py") and not os.path.isfile(path):
        raise UsageError(f"MODEL {o.model!r}: no such file {path}")
