"""Per-op overhead of the emulated neuron device versus plain CPU torch (run by hand).

    TARGET/bin/python benchmarks/emulator_overhead.py      # a venv with torch + neuron-emulator
    TARGET/bin/python benchmarks/emulator_overhead.py --row gpt2 --clock cpu
    TARGET/bin/python benchmarks/emulator_overhead.py --compare BEFORE_SRC AFTER_SRC [--row add]

--clock cpu times each sample by this process's CPU time (time.process_time: every thread of
it, none of the neighbours'), which a loaded machine inflates far less than the wall clock.
--compare runs the rows in fresh processes with PYTHONPATH=BEFORE_SRC, then AFTER_SRC (two
emulator source trees, e.g. `git archive` of two commits' backend/src), alternately, ROUNDS
times each, and prints each row's best ratio for both: before and after from one run.

Each row runs the same work on the CPU and on the emulated device, interleaved in rounds, and
reports the minimum and the median of the samples (the minimum is the figure that survives a
loaded machine; the median shows the noise). The emulator adds Python dispatch per aten op, so
small ops pay most. The tiny GPT-2 row needs `transformers` (skipped without it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

CLOCK = time.perf_counter


def bench(cpu, dev, n: int, rounds: int = 5) -> tuple[list[float], list[float]]:
    """Samples (seconds) of `cpu` and `dev`, interleaved in rounds so both see the same load.
    A sample is the mean of a batch of calls, so that the CPU clock's resolution holds."""
    cpu(), dev()
    c: list[float] = []
    d: list[float] = []
    clock = CLOCK
    for _ in range(rounds):
        for fn, out in ((cpu, c), (dev, d)):
            batch = max(1, min(200, n // 20))
            for _ in range(max(1, n // rounds // batch)):
                t0 = clock()
                for _ in range(batch):
                    fn()
                out.append((clock() - t0) / batch)
    return c, d


def gpt2_step(device: str):
    """One training step of a tiny GPT-2 (2 layers, 64 wide, vocab 128, 32 tokens x 4)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32,
                     bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 128, (4, 32)).to(device)

    def step():
        opt.zero_grad()
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
    return step


GOALS = {"add": 10.0, "mlp": 2.0, "gpt2": 2.5}  # issue 39's goals, device / CPU


def rows_of(only: str | None) -> list[tuple[str, str, object, object, int]]:
    """(key, name, cpu fn, device fn, samples) of the rows asked for."""
    torch.manual_seed(0)
    rows = []
    small_c, small_n = torch.randn(16), torch.randn(16).to("neuron")
    rows.append(("add", "add, 16 elements", lambda: small_c + small_c,
                 lambda: small_n + small_n, 20000))
    for size in (64, 256, 1024) if only in (None, "matmul") else ():
        a = torch.randn(size, size)
        an = a.to("neuron")
        rows.append(("matmul", f"matmul {size}x{size}", lambda a=a: a @ a,
                     lambda an=an: an @ an, 200 if size < 1024 else 30))

    def mlp(device):
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 10)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(64, 256).to(device), torch.randint(0, 10, (64,)).to(device)

        def step():
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        return step

    if only in (None, "mlp"):
        rows.append(("mlp", "MLP training step (256-512-10, batch 64)", mlp("cpu"),
                     mlp("neuron"), 200))
    if only in (None, "gpt2"):
        try:
            rows.append(("gpt2", "tiny GPT-2 training step (AdamW)", gpt2_step("cpu"),
                         gpt2_step("neuron"), 60))
        except ImportError:
            print("(no transformers: the GPT-2 row is skipped)")
    return [r for r in rows if only in (None, r[0])]


def measure(only: str | None) -> list[dict]:
    out = []
    for key, name, cpu, dev, n in rows_of(only):
        c, d = bench(cpu, dev, n)
        out.append({"key": key, "name": name, "cpu": min(c), "dev": min(d),
                    "cpu_med": statistics.median(c), "dev_med": statistics.median(d)})
    return out


def compare(before: str, after: str, rounds: int, argv: list[str]) -> None:
    """Fresh processes, alternately on each emulator source; each row's best ratio."""
    best: dict[str, dict[str, dict]] = {"before": {}, "after": {}}
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for _ in range(rounds):
        for label, src in (("before", before), ("after", after)):
            p = subprocess.run([sys.executable, __file__, "--json", *argv], check=True,
                               capture_output=True, text=True, timeout=1800,
                               env=dict(os.environ, PYTHONPATH=src))
            for r in json.loads(p.stdout.splitlines()[-1]):
                old = best[label].get(r["name"])
                if old is None or r["dev"] / r["cpu"] < old["dev"] / old["cpu"]:
                    best[label][r["name"]] = r
    print(f"load average after:  {os.getloadavg()[0]:.2f}")
    print(f"{'row':<42}{'before':>10}{'after':>10}{'goal':>8}   (best ratio of {rounds} "
          "processes each, device / CPU)")
    for name, b in best["before"].items():
        a = best["after"][name]
        goal = GOALS.get(a["key"])
        print(f"{name:<42}{b['dev'] / b['cpu']:>9.2f}x{a['dev'] / a['cpu']:>9.2f}x"
              f"{f'<= {goal}x' if goal else '':>10}   after: cpu {a['cpu'] * 1e6:.1f} µs, "
              f"neuron {a['dev'] * 1e6:.1f} µs")


def main() -> None:
    global CLOCK
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", choices=["add", "matmul", "mlp", "gpt2"])
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE_SRC", "AFTER_SRC"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int,
                    help="torch intra-op threads (default: torch's; 1 with --clock cpu, since "
                    "idle OpenMP workers spin and a CPU clock counts their spinning)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.compare:
        compare(*a.compare, a.rounds, (["--row", a.row] if a.row else []) +
                (["--threads", str(a.threads)] if a.threads else []) + ["--clock", a.clock])
        return
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    threads = a.threads or (1 if a.clock == "cpu" else None)
    if threads:
        torch.set_num_threads(threads)
    import neuron_emulator

    assert neuron_emulator.is_loaded(), neuron_emulator.status()
    rows = measure(a.row)
    if a.json:
        print(json.dumps(rows))
        return
    print(f"torch {torch.__version__}, neuron-emulator {neuron_emulator.__version__}, "
          f"{torch.get_num_threads()} threads, {a.clock} clock, load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'row':<42}{'cpu µs min/med':>18}{'neuron µs min/med':>20}{'ratio min':>11}")
    for r in rows:
        cm, dm, cmed, dmed = (r[k] * 1e6 for k in ("cpu", "dev", "cpu_med", "dev_med"))
        goal = GOALS.get(r["key"])
        print(f"{r['name']:<42}{cm:>9.1f}/{cmed:<8.1f}{dm:>11.1f}/{dmed:<8.1f}{dm / cm:>10.1f}x"
              + (f"   (goal <= {goal}x)" if goal else ""))


if __name__ == "__main__":
    main()
