"""The host side of the inside/ protocol (spec: the package docstring). One parser for every
script: the JSON document on stdout, the step markers on stderr."""

from __future__ import annotations

import json
import re
from typing import Any

from neuron_env.guards import proc
from neuron_env.inside import MARKER
from neuron_env.util.record import record

STEP = re.compile(r"@@STEP ([^@\n]+)@@")  # THE step regex (inside/_shared.step writes it)
CALL = "@@CALL@@"  # collectives: this rank entered the collective after its last step
ERROR = "@@ERROR@@"  # collectives: a traceback follows
_NOISE = re.compile(r"@@(STEP [^@\n]+|CALL)@@\n?")
START = "start-up"  # where a run is before its first step


def document(stdout: str) -> dict[str, Any] | None:
    """The JSON document between the last two MARKERs, or None (absent, not JSON, not a dict
    is the caller's concern: the value is returned as parsed)."""
    if stdout.count(MARKER) < 2:
        return None
    try:
        doc = json.loads(stdout.rsplit(MARKER, 2)[-2])
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def steps(stderr: str) -> list[str]:
    """The step names announced in `stderr`, in order."""
    return STEP.findall(stderr)


def clean(stderr: str) -> str:
    """stderr without the protocol's markers (what a person should read)."""
    return _NOISE.sub("", stderr).strip()


@record
class Inside:
    """What an inside/ script left behind: its JSON document (or None), the last step it
    announced, and the finished subprocess (markers removed from its stderr)."""

    doc: dict[str, Any] | None
    where: str
    res: proc.Completed


def collect(res: proc.Completed) -> Inside:
    seen = steps(res.stderr)
    return Inside(document(res.stdout), seen[-1] if seen else START,
                  res.replace(stderr=clean(res.stderr)))


@record
class RankTrace:
    """One collectives rank's stderr read: its last step, whether it entered the collective
    after it, the traceback it reported, the readable rest."""

    last_step: str
    entered: bool
    error: str | None
    tail: str


def rank_trace(stderr: str) -> RankTrace:
    found = list(STEP.finditer(stderr))
    last = found[-1].group(1) if found else START
    entered = bool(found) and CALL in stderr[found[-1].end():]
    error = stderr.split(ERROR, 1)[1].strip()[-1500:] if ERROR in stderr else None
    return RankTrace(last, entered, error, clean(stderr)[-800:])
