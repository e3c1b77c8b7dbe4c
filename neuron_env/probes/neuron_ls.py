"""`neuron-ls` as JSON on the running host: a failing or hanging neuron-ls is a finding, not a
crash. Neuron 2.34 drops `-j` for `--output-format json`: `-j` first (every release up to
2.33 has it), the new flag when `-j` is refused as an option; which one answered is recorded.
The new layout wraps the device list in an object with instance-wide fields (_devices)."""

from __future__ import annotations

import json
import os
import re
import shutil

from neuron_env.guards import proc
from neuron_env.util.record import record

TIMEOUT = 5.0
FALLBACK = "/opt/aws/neuron/bin/neuron-ls"
FLAGS = (("-j",), ("--output-format", "json"))
BAD_OPTION = (r"(?i)unrecognized|unknown (option|flag|shorthand)|invalid option|"
              r"no such option|usage:")  # compiled on first use: most runs never need it


@record
class NeuronLsFacts:
    path: str | None
    devices: tuple[dict, ...] | None = None
    error: str | None = None
    timed_out: bool = False
    args: str | None = None  # the JSON flag that was used: "-j" or "--output-format json"


def _refused(res: proc.Completed) -> bool:
    """`-j` rejected as an option (argparse exits 2; cobra says 'unknown shorthand flag')."""
    return res.returncode == 2 or bool(re.search(BAD_OPTION, res.stdout + res.stderr))


def probe_neuron_ls() -> NeuronLsFacts:
    path = shutil.which("neuron-ls") or (FALLBACK if os.access(FALLBACK, os.X_OK) else None)
    if path is None:
        return NeuronLsFacts(None, error="neuron-ls not found (aws-neuronx-tools not installed, "
                                         "or /opt/aws/neuron/bin not on PATH)")
    for flags in FLAGS:
        res = proc.run([path, *flags], timeout=TIMEOUT)
        if res.timed_out or res.error or res.returncode == 0 or not _refused(res):
            break
    return _judge(path, " ".join(flags), res)


def _judge(path: str, args: str, res: proc.Completed) -> NeuronLsFacts:
    cmd = f"neuron-ls {args}"
    if res.timed_out:
        return NeuronLsFacts(path, error=f"{cmd} hung (killed after {TIMEOUT:.0f}s): the "
                                         "driver or a device may be stuck", timed_out=True,
                             args=args)
    if res.error:
        return NeuronLsFacts(path, error=f"neuron-ls could not run: {res.error}", args=args)
    if res.returncode != 0:
        return NeuronLsFacts(path, error=f"{cmd} exited {res.returncode}: "
                                         f"{res.tail(300) or '(no output)'}", args=args)
    try:
        data = json.loads(res.stdout)
    except ValueError as e:
        return NeuronLsFacts(path, error=f"{cmd} printed malformed JSON ({e}): "
                                         f"{res.stdout[:120]!r}", args=args)
    devices = _devices(data)
    if devices is None:
        return NeuronLsFacts(path, error=f"{cmd} printed JSON that is not a list of devices "
                                         f"(nor an object holding one): {res.stdout[:120]!r}",
                             args=args)
    return NeuronLsFacts(path, devices=tuple(devices), args=args)


def _devices(data: object) -> list[dict] | None:
    """The device list: `-j` prints it bare; the 2.34 `--output-format json` layout adds
    top-level fields (instance, UltraServer) around it, so an object holding exactly one list
    of device entries (each with `neuron_device`) is read as that list. Its key is not assumed:
    no page read names it."""
    if isinstance(data, list):
        return data if all(isinstance(d, dict) for d in data) else None
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list) and v
                 and all(isinstance(d, dict) and "neuron_device" in d for d in v)]
        if len(lists) == 1:
            return lists[0]
    return None
