"""`neuron-ls -j` on the running host: a failing or hanging neuron-ls is a finding, not a crash."""

from __future__ import annotations

import json
import os
import shutil

from neuron_env.util import proc
from neuron_env.util.record import record

TIMEOUT = 5.0
FALLBACK = "/opt/aws/neuron/bin/neuron-ls"


@record
class NeuronLsFacts:
    path: str | None
    devices: tuple[dict, ...] | None = None
    error: str | None = None
    timed_out: bool = False


def probe_neuron_ls() -> NeuronLsFacts:
    path = shutil.which("neuron-ls") or (FALLBACK if os.access(FALLBACK, os.X_OK) else None)
    if path is None:
        return NeuronLsFacts(None, error="neuron-ls not found (aws-neuronx-tools not installed, "
                                         "or /opt/aws/neuron/bin not on PATH)")
    res = proc.run([path, "-j"], timeout=TIMEOUT)
    if res.timed_out:
        return NeuronLsFacts(path, error=f"neuron-ls -j hung (killed after {TIMEOUT:.0f}s): the "
                                         "driver or a device may be stuck", timed_out=True)
    if res.error:
        return NeuronLsFacts(path, error=f"neuron-ls could not run: {res.error}")
    if res.returncode != 0:
        return NeuronLsFacts(path, error=f"neuron-ls -j exited {res.returncode}: "
                                         f"{res.tail(300) or '(no output)'}")
    try:
        data = json.loads(res.stdout)
    except ValueError as e:
        return NeuronLsFacts(path, error=f"neuron-ls -j printed malformed JSON ({e}): "
                                         f"{res.stdout[:120]!r}")
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        return NeuronLsFacts(path, error="neuron-ls -j printed JSON that is not a list of "
                                         f"devices: {res.stdout[:120]!r}")
    return NeuronLsFacts(path, devices=tuple(data))
