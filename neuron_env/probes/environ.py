"""The environment variables doctor judges (Neuron runtime, TorchNeuron, libfabric, PATH).

Checks never read os.environ: this probe copies the variables that matter into facts, so a test
passes them explicitly and a report shows what the checks saw.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from neuron_env.util.record import factory, record

PREFIXES = ("NEURON_", "AWS_NEURON_", "TORCH_NEURONX_", "FI_")
NAMES = ("PATH", "HOME", "TMPDIR", "KUBERNETES_SERVICE_HOST", "XDG_CACHE_HOME",
         "SLURM_JOB_NUM_NODES", "SLURM_NNODES")  # the Slurm ones: net.efa's multi-node intent


@record
class EnvFacts:
    vars: dict[str, str] = factory(dict)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.vars.get(name, default)


def probe_env(environ: Mapping[str, str] | None = None) -> EnvFacts:
    env = os.environ if environ is None else environ
    return EnvFacts({k: v for k, v in env.items() if k in NAMES or k.startswith(PREFIXES)})
