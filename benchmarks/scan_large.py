"""scan on a large generated tree against a bare single-process `ast.parse` loop over the same
files, side by side in one run (interleaved, medians of N runs; run by hand, not in CI).

    python benchmarks/scan_large.py [--files 10000] [--runs 3] [--jobs 1 2] [--keep DIR]

The tree is a made-up ML repository (seeded, so every run builds the same one): training
scripts that use torch, torch_xla and CUDA (they have findings), model and data modules that
use torch, and plain helpers, tests and configs that do not. Each figure is the bare loop's
time divided by scan's (higher is faster; 1.0 = as fast as parsing alone): scan with every rule
on, rules and .gitignore walk included, no rendering. Goals (#49): `-j 1` >= 0.9x, `-j 2` >= 1.6x
at >= 10,000 files (wall time, on a machine with 2 free cores). On a loaded machine read the
CPU column (this process's and its children's CPU seconds): wall times there measure the
neighbours; `-j 2`'s CPU figure is both processes' total, so it shows the pool's cost, not its
speed-up.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from neuron_env.scan import engine, ruleset, walk  # noqa: E402

TRAIN = '''"""Training entry point {n}."""
import os
import torch
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader

os.environ["XLA_USE_BF16"] = "1"


def train_{n}(model, loader: DataLoader, epochs: int = {k}) -> float:
    device = xm.xla_device()
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-{k})
    total = 0.0
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            xm.optimizer_step(opt)
            total += float(loss.detach().cpu())
        xm.mark_step()
    return total


def evaluate_{n}(model, batch):
    model = model.cuda()
    with torch.no_grad():
        return model(batch.cuda()).argmax(-1)
'''
MODEL = '''"""Model block {n}."""
import math

import torch
from torch import nn


class Block{n}(nn.Module):
    def __init__(self, dim: int = {d}, heads: int = {k}) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        att = att.softmax(dim=-1)
        return x + self.proj(att @ v)
'''
HELPER = '''"""Helpers {n}: parsing, formatting and small containers."""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Record{n}:
    name: str
    values: list[int] = field(default_factory=list)

    def total(self) -> int:
        return sum(v for v in self.values if v > {k})

    def as_json(self) -> str:
        return json.dumps({{"name": self.name, "total": self.total()}})


def parse_{n}(text: str) -> list[Record{n}]:
    out = []
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        out.append(Record{n}(name.strip(), [int(x) for x in rest.split(",") if x.strip()]))
    return out


def widest_{n}(records: list[Record{n}]) -> str:
    return max((r.name for r in records), key=len, default="")
'''
TEST = '''import pytest

from helpers_{m} import parse_{m}


@pytest.mark.parametrize("text,want", [("a: 1, 2", 3), ("b: {k}", {k})])
def test_parse_{n}(text, want):
    assert parse_{m}(text)[0].total() in (want, 0)


def test_empty_{n}():
    assert parse_{m}("") == []
'''
KINDS = [("train", TRAIN, 2), ("model", MODEL, 3), ("helpers", HELPER, 3), ("test", TEST, 2)]


def generate(root: Path, files: int, seed: int = 49) -> None:
    rnd = random.Random(seed)
    weights = [w for _, _, w in KINDS]
    for i in range(files):
        name, text, _ = rnd.choices(KINDS, weights)[0]
        d = root / f"pkg{i // 200}"
        d.mkdir(parents=True, exist_ok=True)
        body = text.format(n=i, m=max(i - 1, 0), k=rnd.randint(1, 9), d=rnd.choice([64, 128]))
        blocks = rnd.randint(1, 4)  # files of 30 to 150 lines
        extra = "".join(f"\n\ndef extra_{i}_{j}(a, b):\n    return [a[x] * b for x in range(len(a))"
                        f" if x % {j + 2}]\n" for j in range(blocks))
        (d / f"{name}_{i}.py").write_text(body + extra)


def cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), \
        resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, *args) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), cpu()
    fn(*args)
    return time.perf_counter() - w0, cpu() - c0


def bare_parse(paths: list[str]) -> None:
    """What a user would write: one process, read each file, parse it, nothing else."""
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        with contextlib.suppress(SyntaxError, ValueError):
            ast.parse(data)


def scan(tree: str, jobs: int) -> int:
    rules = ruleset.locate(None)
    rs = ruleset.load(rules)
    tasks, _ = walk.discover([tree])
    res = engine.run(tasks, str(rules), set(rs.rules), False, jobs)
    return sum(len(r["hits"]) for r in res)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--keep", help="build the tree here (kept) instead of a temporary folder")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(a.keep or tmp) / f"tree-{a.files}"
        if not root.exists():
            generate(root, a.files)
        paths = sorted(str(p) for p in root.rglob("*.py"))
        lines = sum(Path(p).read_bytes().count(b"\n") for p in paths)
        print(f"generated tree: {len(paths)} Python files, {lines} lines; runs: {a.runs} "
              f"(medians); findings: {scan(str(root), 1)}")
        names = ["bare ast.parse (1 process)", *(f"scan -j {j}" for j in a.jobs)]
        samples: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
        for i in range(a.runs):  # interleaved, so that a change of load hits all alike
            samples[names[0]].append(timed(bare_parse, paths))
            for j, n in zip(a.jobs, names[1:], strict=True):
                samples[n].append(timed(scan, str(root), j))
            print(f"run {i + 1}: " + ", ".join(f"{k} {v[-1][0]:.2f} s" for k, v in
                                               samples.items()), flush=True)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in samples.items()}
    bw, bc = med[names[0]]
    print(f"{'':<28} {'wall s':>8} {'CPU s':>8} {'x bare (wall)':>14} {'x bare (CPU)':>13}")
    for n, (w, c) in med.items():
        print(f"{n:<28} {w:8.2f} {c:8.2f} {bw / w:14.2f} {bc / c:13.2f}")
    print("goals: scan -j 1 >= 0.9x, scan -j 2 >= 1.6x (wall, 2 free cores)")


if __name__ == "__main__":
    main()
