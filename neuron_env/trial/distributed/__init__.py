"""`trial MODEL --world-size N`, in collectives' shape (neuron_env/collectives/):

- `options`: DistOptions, their checks and the payload every process gets (pure);
- `launch`: THE builder of the torchrun agent line and the rank script's argv, for neuron-env's
  own launch and for the lines `--print-launch` prints (pure);
- `runner`: starts and supervises the reference and the ranks (collectives.runner.supervise),
  reads what they left in the run directory by the one opener (guards/files.open_dir/read_at),
  and `--collect`s a run launched elsewhere;
- `results`: the verdict, `trial.distributed` (pure).

The names the trial command uses are re-exported here.
"""

from neuron_env.trial.distributed.launch import launch_script
from neuron_env.trial.distributed.options import (
    BACKENDS,
    PORT_VAR,
    STRATEGIES,
    TOKEN,
    TOLERANCE,
    DistOptions,
    payload,
    validate,
)
from neuron_env.trial.distributed.results import verdict
from neuron_env.trial.distributed.runner import (
    DistRun,
    RankState,
    collect,
    first_death,
    run,
    worker_exits,
)

__all__ = ["BACKENDS", "PORT_VAR", "STRATEGIES", "TOKEN", "TOLERANCE", "DistOptions", "DistRun",
           "RankState", "collect", "first_death", "launch_script", "payload", "run", "validate",
           "verdict", "worker_exits"]
