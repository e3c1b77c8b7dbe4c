"""`neuron-env smoke` wall time against a bare `python -c` doing the same matmul comparison.

    python benchmarks/smoke_overhead.py --python TARGET [--device neuron] [--runs 5]

Same size (1024), dtype (float32) and iteration count (10) in both; medians of RUNS runs.
"""

from __future__ import annotations

from _overhead import compare

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


def main() -> None:
    compare(BARE, ["smoke", "--size", "1024", "--iterations", "10"], "matmul check")


if __name__ == "__main__":
    main()
