"""Per-op overhead of the emulated neuron device versus plain CPU torch (run by hand).

    TARGET/bin/python benchmarks/emulator_overhead.py      # a venv with torch + neuron-emulator

Medians of repeated calls; the emulator adds Python dispatch per aten op, so small ops pay most.
"""

from __future__ import annotations

import statistics
import time

import torch


def bench(fn, n: int) -> float:
    fn()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    import neuron_emulator

    assert neuron_emulator.is_loaded(), neuron_emulator.status()
    torch.manual_seed(0)
    rows = []
    small_c, small_n = torch.randn(16), torch.randn(16).to("neuron")
    rows.append(("add, 16 elements", lambda: small_c + small_c, lambda: small_n + small_n, 2000))
    for size in (64, 256, 1024):
        a = torch.randn(size, size)
        an = a.to("neuron")
        rows.append((f"matmul {size}x{size}", lambda a=a: a @ a, lambda an=an: an @ an,
                     200 if size < 1024 else 30))

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

    rows.append(("MLP training step (256-512-10, batch 64)", mlp("cpu"), mlp("neuron"), 100))
    print(f"torch {torch.__version__}, neuron-emulator {neuron_emulator.__version__}, "
          f"{torch.get_num_threads()} threads")
    print(f"{'op':<42}{'cpu µs':>10}{'neuron µs':>12}{'overhead':>10}")
    for name, cpu, dev, n in rows:
        c, d = bench(cpu, n) * 1e6, bench(dev, n) * 1e6
        print(f"{name:<42}{c:>10.1f}{d:>12.1f}{d / c:>9.1f}x")


if __name__ == "__main__":
    main()
