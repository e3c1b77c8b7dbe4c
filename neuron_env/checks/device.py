"""The checks doctor's device steps make (--smoke, --smoke --collectives): declared here like
every other check, so `--list-checks`, `select()` and the docs table know them; their command
runs them (commands/smoke.py, commands/collectives.py, commands/doctor.py) and builds their
results from these records."""

from __future__ import annotations

from neuron_env.checks.registry import declare

SMOKE = declare("smoke.device", "smoke", "a small matmul on the device matches the CPU",
                flag="--smoke")
ALL_REDUCE = declare("collectives.all_reduce", "collectives",
                     "all_reduce across the local devices gives the right sums",
                     flag="--smoke --collectives")
