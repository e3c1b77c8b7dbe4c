"""`neuron-env collectives` bus bandwidth against a bare torch.distributed script timing the
same all_reduce the same way (both: 2 ranks of gloo on the CPU unless --device says otherwise).

    python benchmarks/collectives_busbw.py --python TARGET [--size 64MB] [--iterations 20]
                                           [--runs 5] [--world-size 2] [--device cpu]

Runs alternate (bare, neuron-env, bare, ...); prints each side's median busbw (GB/s, as
nccl-tests defines it: size/time x 2(n-1)/n) with its spread, their ratio, and neuron-env's
wall time per run against the bare script's (the harness's own overhead).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

BARE = r"""
import os, sys, time, torch, torch.distributed as dist
size, iters, device = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
dist.init_process_group("gloo" if device == "cpu" else "nccl")
r, n = dist.get_rank(), dist.get_world_size()
dev = torch.device(device, r) if device == "cuda" else torch.device("cpu")
x = torch.ones(size // 4, dtype=torch.float32, device=dev)
dist.all_reduce(x)
dist.barrier()
t0 = time.perf_counter()
for _ in range(iters):
    dist.all_reduce(x)
if device == "cuda":
    torch.cuda.synchronize()
sec = (time.perf_counter() - t0) / iters
t = torch.tensor([sec], dtype=torch.float64, device=dev)
dist.all_reduce(t)
sec = t.item() / n
if r == 0:
    print("BUSBW", size / sec / 1e9 * 2 * (n - 1) / n)
dist.destroy_process_group()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bare(a, script: Path) -> tuple[float, float]:
    torchrun = str(Path(a.python).with_name("torchrun"))
    t0 = time.perf_counter()
    p = subprocess.run([torchrun, f"--nproc-per-node={a.world_size}", "--rdzv-backend=c10d",
                        f"--rdzv-endpoint=127.0.0.1:{free_port()}", str(script),
                        str(a.size), str(a.iterations), a.device], capture_output=True,
                       text=True, timeout=900, check=True)
    wall = time.perf_counter() - t0
    return float(p.stdout.split("BUSBW")[-1].split()[0]), wall


def ours(a) -> tuple[float, float]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "neuron_env", "collectives", "--python", a.python,
                        "--device", a.device, "--world-size", str(a.world_size), "--ops",
                        "all_reduce", "--sizes", f"{a.size}B", "--iterations",
                        str(a.iterations), "--format", "json"], capture_output=True, text=True,
                       timeout=900, env=dict(os.environ, AWS_EC2_METADATA_DISABLED="true"))
    wall = time.perf_counter() - t0
    return json.loads(p.stdout)["rows"][0]["busbw_gbps"], wall


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} (min {min(xs):.3f}, max {max(xs):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--size", type=int, default=64 << 20)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    script = Path(os.environ.get("TMPDIR", "/tmp")) / "neuron_env_bare_allreduce.py"
    script.write_text(BARE)
    b_bw, b_wall, o_bw, o_wall = [], [], [], []
    for _ in range(a.runs):
        bw, wall = bare(a, script)
        b_bw.append(bw)
        b_wall.append(wall)
        bw, wall = ours(a)
        o_bw.append(bw)
        o_wall.append(wall)
    print(f"all_reduce {a.size} B, {a.world_size} ranks, {a.device}, {a.iterations} iterations, "
          f"{a.runs} interleaved runs")
    print(f"  busbw GB/s  bare torch.distributed: {spread(b_bw)}")
    print(f"  busbw GB/s  neuron-env collectives:  {spread(o_bw)}")
    print(f"  ratio neuron-env / bare: {statistics.median(o_bw) / statistics.median(b_bw):.3f}")
    print(f"  wall s  bare: {spread(b_wall)}  neuron-env: {spread(o_wall)}")


if __name__ == "__main__":
    main()
