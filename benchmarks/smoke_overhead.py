"""`neuron-env smoke` wall time against a bare `python -c` doing the same matmul comparison.

    python benchmarks/smoke_overhead.py --python TARGET [--device neuron] [--runs 5]

Same size (1024), dtype (float32) and iteration count (10) in both; medians of RUNS runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

BARE = """
import time, statistics, torch
d = torch.device({device!r})
g = torch.Generator().manual_seed(0)
a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
want = a @ b
da, db = a.to(d), b.to(d)
out = da @ db
ts = []
for _ in range(10):
    t0 = time.perf_counter(); out = da @ db; ts.append(time.perf_counter() - t0)
torch.testing.assert_close(out.cpu(), want, rtol=1e-4, atol=1e-4)
print(statistics.median(ts))
"""


def timed(argv, runs, env):
    s = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       timeout=600, check=True)
        s.append(time.perf_counter() - t0)
    return statistics.median(s[1:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--device", default="neuron")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    bare = timed([a.python, "-c", BARE.format(device=a.device)], a.runs, env)
    smoke = timed([sys.executable, "-m", "neuron_env", "smoke", "--python", a.python,
                   "--device", a.device, "--size", "1024", "--iterations", "10"], a.runs, env)
    print(f"bare python -c matmul check   {bare:.3f} s")
    print(f"neuron-env smoke              {smoke:.3f} s")
    print(f"smoke / bare = {smoke / bare:.3f} (target <= 1.15)")


if __name__ == "__main__":
    main()
