"""Regression guards of the emulator's step figures (run by hand, not in the tests): exits 1
when a training step on the emulated device is slower, against the same step on the CPU, than
its guard; 2 when a guarded row could not be measured (no `transformers` for the GPT-2 row).

    TARGET/bin/python benchmarks/emulator_guards.py [--tries 3]

TARGET: a venv with torch and neuron-emulator (the tests' torch venv has both, and
transformers). Rows and timing are emulator_overhead.py's, on the CPU clock (this process's CPU
time, one torch thread: a loaded machine inflates it far less than the wall clock); each
figure is the device step's minimum over the CPU step's minimum, interleaved in one process.
A row over its guard is measured again, up to --tries times, and the best try counts (the
figure only ever gets worse under load, never better).

Guards (docs/emulator.md, "Speed"): MLP SGD step <= 2.3x the CPU, tiny GPT-2 AdamW step <= 2.9x.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import emulator_overhead

GUARDS = {"mlp": 2.3, "gpt2": 2.9}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tries", type=int, default=3)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    emulator_overhead.CLOCK = time.process_time
    import neuron_emulator

    assert neuron_emulator.is_loaded(), neuron_emulator.status()
    worst = 0
    for key, guard in GUARDS.items():
        best = None
        for _ in range(max(1, a.tries)):
            rows = emulator_overhead.measure(key)
            if not rows:
                break
            r = rows[0]
            ratio = r["dev"] / r["cpu"]
            best = ratio if best is None else min(best, ratio)
            if best <= guard:
                break
        if best is None:
            print(f"{key:<6} not measured (guard <= {guard}x)")
            worst = max(worst, 2)
            continue
        ok = best <= guard
        print(f"{key:<6} {best:5.2f}x the CPU (guard <= {guard}x): {'ok' if ok else 'EXCEEDED'}")
        worst = max(worst, 0 if ok else 1)
    return worst


if __name__ == "__main__":
    sys.exit(main())
