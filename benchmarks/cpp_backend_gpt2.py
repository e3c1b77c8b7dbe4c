"""Issue 39's GPT-2 row on a C++ backend: the number behind docs/emulator.md's proposal.

    TARGET/bin/python benchmarks/cpp_backend_gpt2.py [--rounds 3] [--build-dir DIR]

Builds benchmarks/cpp_backend/proto_backend.cpp (a minimal PrivateUse1 backend in C++: host
memory, one device, every op the CPU kernel's through PyTorch's own cpu_fallback; no Python
per op) with torch.utils.cpp_extension (a C++17 compiler and ninja needed; neither is asked
of neuron-env's users), reports the build's time, checks the tiny GPT-2's logits against the
CPU's, then times the tiny GPT-2 AdamW step on it against the CPU exactly as
emulator_overhead.py --row gpt2 --clock cpu does (one thread, CPU clock, interleaved; the
minimum). The emulator is kept out of this process (TORCH_DEVICE_BACKEND_AUTOLOAD=0): the
prototype takes the PrivateUse1 slot, under the name `proto`. Run by hand, never in CI.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # before torch: the emulator stays out

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from emulator_overhead import GOALS, gpt2_step  # noqa: E402


class ProtoModule:
    """The device module torch asks for seeding and availability."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        return None


def build(build_dir: str) -> float:
    """Compile and load the backend; prints and returns the wall seconds it took."""
    from torch.utils import cpp_extension

    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cpp_extension.load(name="neuron_env_proto_backend",
                       sources=[str(HERE / "cpp_backend" / "proto_backend.cpp")],
                       extra_cflags=["-O2"], build_directory=build_dir, verbose=False)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
    print(f"build: {wall:.1f} s wall, {cpu:.1f} s CPU of the compiler "
          f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    return wall


def check_logits() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32,
                     bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 128, (4, 32))
    want = model(input_ids=ids).logits
    got = model.to("proto")(input_ids=ids.to("proto")).logits
    assert got.device.type == "proto", got.device
    torch.testing.assert_close(got.cpu(), want)
    print("logits: the same as the CPU's (torch.testing.assert_close)")


def best(fn, n: int = 8, rounds: int = 5) -> float:
    fn()
    low = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        low = min(low, (time.process_time() - t0) / n)
    return low


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build-dir", help="where ninja builds (default: a new temporary folder)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    build_dir = a.build_dir or tempfile.mkdtemp(prefix="proto-backend-")
    os.makedirs(build_dir, exist_ok=True)
    torch.utils.rename_privateuse1_backend("proto")
    build(build_dir)
    torch._register_device_module("proto", ProtoModule())
    check_logits()
    cpu, dev = gpt2_step("cpu"), gpt2_step("proto")
    c, d = [], []
    for _ in range(a.rounds):  # interleaved
        c.append(best(cpu))
        d.append(best(dev))
    print(f"tiny GPT-2 training step (AdamW), C++ prototype / CPU: {min(d) / min(c):.2f}x "
          f"(cpu {min(c) * 1e3:.2f} ms, proto {min(d) * 1e3:.2f} ms; goal <= {GOALS['gpt2']}x)")


if __name__ == "__main__":
    main()
