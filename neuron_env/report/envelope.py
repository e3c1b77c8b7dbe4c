"""THE envelope of every JSON document neuron-env prints: schema, tool, ..., exit_code (and
`error` on failure). Success (Report/Document) and failure both come through here."""

from __future__ import annotations

from typing import Any

from neuron_env import __version__

TOOL = {"name": "neuron-env", "version": __version__}


def envelope(schema: str, exit_code: int, **body: Any) -> dict[str, Any]:
    """`{"schema", "tool", **body, "exit_code"}` in that key order (stable for readers)."""
    extra = {k: v for k, v in body.items() if k not in ("schema", "tool", "exit_code")}
    return {"schema": schema, "tool": TOOL, **extra, "exit_code": exit_code}


def error_envelope(schema: str, exit_code: int, error: dict[str, Any]) -> dict[str, Any]:
    """The document a failed command prints in JSON mode: no results, one error."""
    return envelope(schema, exit_code, error=error, results=[],
                    summary={"pass": 0, "warn": 0, "fail": 0, "skip": 0, "error": 1})
