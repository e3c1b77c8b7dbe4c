"""Per-op overhead of the emulated neuron device versus plain CPU torch (run by hand).

    TARGET/bin/python benchmarks/emulator_overhead.py      # a venv with torch + neuron-emulator

Each row runs the same work on the CPU and on the emulated device, interleaved in rounds, and
reports the minimum and the median of the samples (the minimum is the figure that survives a
loaded machine; the median shows the noise). The emulator adds Python dispatch per aten op, so
small ops pay most. The tiny GPT-2 row needs `transformers` (skipped without it).
"""

from __future__ import annotations

import statistics
import time

import torch


def bench(cpu, dev, n: int, rounds: int = 5) -> tuple[list[float], list[float]]:
    """Samples (seconds) of `cpu` and `dev`, interleaved in rounds so both see the same load."""
    cpu(), dev()
    c: list[float] = []
    d: list[float] = []
    for _ in range(rounds):
        for fn, out in ((cpu, c), (dev, d)):
            for _ in range(max(1, n // rounds)):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
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
    try:
        rows.append(("tiny GPT-2 training step (AdamW)", gpt2_step("cpu"), gpt2_step("neuron"),
                     40))
    except ImportError:
        print("(no transformers: the GPT-2 row is skipped)")
    print(f"torch {torch.__version__}, neuron-emulator {neuron_emulator.__version__}, "
          f"{torch.get_num_threads()} threads")
    print(f"{'row':<42}{'cpu µs min/med':>18}{'neuron µs min/med':>20}{'ratio min':>11}")
    for name, cpu, dev, n in rows:
        c, d = bench(cpu, dev, n)
        cm, dm = min(c) * 1e6, min(d) * 1e6
        cmed, dmed = statistics.median(c) * 1e6, statistics.median(d) * 1e6
        print(f"{name:<42}{cm:>9.1f}/{cmed:<8.1f}{dm:>11.1f}/{dmed:<8.1f}{dm / cm:>10.1f}x")


if __name__ == "__main__":
    main()
