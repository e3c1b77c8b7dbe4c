"""`neuron-env matrix update --from URL|s3://…` (see matrix/update.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neuron_env.errors import ConfigurationError
from neuron_env.matrix import catalog
from neuron_env.matrix import update as upd
from neuron_env.matrix.model import Matrix
from neuron_env.report.envelope import envelope
from neuron_env.report.model import Document

SCHEMA = "neuron-env.matrix-update/1"


def _load(entry: catalog.Entry) -> Matrix | None:
    from neuron_env.errors import NeuronEnvError
    from neuron_env.matrix.loader import load_file

    try:
        return load_file(entry.path, bundled=entry.bundled)
    except NeuronEnvError:
        return None


def update_doc(source: str, pin: str | None, into: Path | None, ca_bundle: str | None,
               timeout: float, allow_older: bool, dry_run: bool,
               key: Path | None = None) -> Document:
    target = into or catalog.user_dir()
    if target is None:
        raise ConfigurationError("no user matrix directory: HOME is not set",
                                 hint=f"set {catalog.DIR_ENV_VAR} or pass --dir")
    if into is None and (why := catalog.untrusted_user_dir(target)):
        raise ConfigurationError(
            f"the user matrix directory {target} is {why}: every command would ignore what "
            "is written there; refused", hint=f"run as its owner, or set {catalog.DIR_ENV_VAR} "
            "to a directory of your own (or pass --dir)")
    fetched = upd.fetch(source, pin, ca_bundle=ca_bundle, timeout=timeout, key=key)
    known = catalog.available([target] if into is not None and catalog.scan(target) else [])
    decisions = upd.plan(fetched, target, known, _load, allow_older)
    code = upd.apply(decisions, dry_run)
    files: list[dict[str, Any]] = [
        {"url": d.url, "release": d.release or None, "sha256": d.sha256, "path": d.path or None,
         "action": d.action, "reason": d.reason} for d in decisions]
    return Document(envelope(SCHEMA, code, source=upd.split_pin(source)[0], directory=str(target),
                             dry_run=dry_run, signed=key is not None, files=files), update_text)


def update_text(body: dict[str, Any]) -> str:
    lines = []
    for f in body["files"]:
        what = f"Neuron {f['release']}" if f["release"] else f["url"]
        lines.append(f"{f['action']:<10} {what}: {f['reason']}"
                     + (f" -> {f['path']}" if f["action"] in ("install", "replace") else ""))
    refused = [f for f in body["files"] if f["action"] == "refused"]
    if refused:
        lines.append(f"refused: {len(refused)} file(s) failed; nothing was written to "
                     f"{body['directory']}")
    else:
        n = sum(f["action"] in ("install", "replace") for f in body["files"])
        verb = "would write" if body["dry_run"] else "wrote"
        lines.append(f"{verb} {n} matri{'x' if n == 1 else 'ces'} to {body['directory']}")
    return "\n".join(lines) + "\n"
