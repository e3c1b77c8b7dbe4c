"""The collectives run's options, parsed and validated before any process starts (pure)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from neuron_env.errors import UsageError

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
DTYPES = ("float32", "bfloat16", "float16", "int32")
DEVICES = ("neuron", "cpu", "cuda")
BACKENDS = {"neuron": "neuron", "cpu": "gloo", "cuda": "nccl"}
UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
         "G": 1 << 30, "GB": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?B?)\s*$", re.I)
MAX_SIZE = 8 << 30


@dataclass(frozen=True)
class CollectivesOptions:
    device: str = "neuron"
    backend: str | None = None  # default: by device (BACKENDS)
    world_size: int | None = None  # default: one rank per visible device (2 on the CPU)
    ops: tuple[str, ...] = OPS
    sizes: tuple[int, ...] = ()
    dtype: str = "float32"
    iterations: int = 5
    timeout: float = 300.0
    extra: dict = field(default_factory=dict)

    def payload(self, backend: str) -> dict:
        """What the rank script gets (argv[1], JSON)."""
        return {"device": self.device, "backend": backend, "ops": list(self.ops),
                "sizes": list(self.sizes), "dtype": self.dtype, "iterations": self.iterations}


def parse_size(text: str) -> int:
    m = _SIZE.match(text)
    if not m:
        raise UsageError(f"--sizes: {text!r} is not a size", hint="e.g. 8B, 64K, 16MB, 1G")
    return int(m.group(1)) * UNITS[m.group(2).upper()]


def parse_sizes(spec: str | None, factor: int = 4) -> tuple[int, ...]:
    """`8B..64MB` (each size `factor` times the last, as nccl-tests' -b/-e/-f) or `1K,4M,...`."""
    spec = spec or "8B..16MB"
    if ".." in spec:
        lo, hi = (parse_size(x) for x in spec.split("..", 1))
        if lo < 1 or hi < lo:
            raise UsageError(f"--sizes {spec}: the range must go up from at least 1 byte")
        out, s = [], lo
        while s <= hi:
            out.append(s)
            s *= factor
    else:
        out = [parse_size(x) for x in spec.split(",") if x.strip()]
    if not out or any(s < 1 or s > MAX_SIZE for s in out):
        raise UsageError(f"--sizes {spec}: sizes must be between 1 byte and 8 GiB")
    return tuple(out)


def parse_ops(values: list[str]) -> tuple[str, ...]:
    ops = tuple(dict.fromkeys(values)) if values else OPS
    bad = [o for o in ops if o not in OPS]
    if bad:
        raise UsageError(f"--ops: unknown {', '.join(bad)}", hint=f"choose from {', '.join(OPS)}")
    return ops


def validate(o: CollectivesOptions) -> None:
    if o.device not in DEVICES:
        raise UsageError(f"--device {o.device!r}: expected one of {', '.join(DEVICES)}")
    if o.dtype not in DTYPES:
        raise UsageError(f"--dtype {o.dtype!r}: expected one of {', '.join(DTYPES)}")
    if o.world_size is not None and not 1 <= o.world_size <= 1024:
        raise UsageError(f"--world-size {o.world_size}: expected 1..1024")
    if not 1 <= o.iterations <= 100000:
        raise UsageError(f"--iterations {o.iterations}: expected 1..100000")
    if not (math.isfinite(o.timeout) and o.timeout > 0):
        raise UsageError(f"--timeout {o.timeout}: expected a positive number of seconds")


def human_sizes(sizes: tuple[int, ...]) -> str:
    """The --sizes value that reproduces `sizes` exactly."""
    return ",".join(f"{s}B" for s in sizes)
