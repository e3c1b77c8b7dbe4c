"""The target interpreter: resolve it (--python, NEURON_ENV_PYTHON, $VIRTUAL_ENV, python3 on
PATH: the order docs/doctor.md gives) and read its facts with inside/probe.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from neuron_env.errors import InterpreterError
from neuron_env.guards import proc
from neuron_env.target_python import launch, protocol
from neuron_env.util.names import canonicalize_name
from neuron_env.util.record import factory, record

ENV_VAR = "NEURON_ENV_PYTHON"
PROBE_TIMEOUT = 30.0


@record
class Dist:
    name: str
    version: str
    direct_url: dict | None = None
    location: str | None = None
    wrong_package_marker: bool = False
    # its `Requires-Dist:` lines on numpy and optimum (inside/probe.py PINNED), as written
    requires_pinned: tuple[str, ...] = ()


@record
class TargetFacts:
    path: str
    chosen_by: str  # "--python", "NEURON_ENV_PYTHON", "VIRTUAL_ENV", "PATH"
    version: str | None = None
    executable: str | None = None
    prefix: str | None = None
    venv: bool | None = None
    machine: str | None = None
    dists: dict[str, Dist] = factory(dict)  # keyed by canonical name
    broken: tuple[str, ...] = ()
    manifest: dict[str, Any] | None = None
    manifest_path: str | None = None
    manifest_error: str | None = None
    error: str | None = None  # the interpreter exists but could not be probed

    @property
    def usable(self) -> bool:
        return self.error is None and self.version is not None

    def dist(self, name: str) -> Dist | None:
        return self.dists.get(canonicalize_name(name))


def resolve_target(flag: str | None) -> tuple[str, str]:
    """(path, chosen_by). Raise InterpreterError when the chosen one does not exist."""
    if flag:
        path, by = flag, "--python"
    elif os.environ.get(ENV_VAR):
        path, by = os.environ[ENV_VAR], ENV_VAR
    elif os.environ.get("VIRTUAL_ENV"):
        path, by = str(Path(os.environ["VIRTUAL_ENV"]) / "bin" / "python"), "VIRTUAL_ENV"
    else:
        found = shutil.which("python3")
        if not found:
            raise InterpreterError("no python3 on PATH to check",
                                   hint="pass --python PATH (the training environment's python)")
        return found, "PATH"
    if os.sep not in path:
        found = shutil.which(path)
        if found:
            return found, by
    p = Path(path).expanduser()
    if not p.exists():
        raise InterpreterError(f"target interpreter {path} (from {by}) does not exist",
                               hint="pass --python with the python of the environment to check, "
                                    "e.g. --python /opt/venv/bin/python")
    if p.is_dir():
        raise InterpreterError(f"target interpreter {path} (from {by}) is a directory",
                               hint=f"did you mean --python {p / 'bin' / 'python'}?")
    if not os.access(p, os.X_OK):
        raise InterpreterError(f"target interpreter {path} (from {by}) is not executable",
                               hint=f"chmod +x {path}, or choose another --python")
    return str(p), by


def _why_unusable(path: str, res: proc.Completed) -> str:
    if res.timed_out:
        return f"{path} did not finish the probe within {PROBE_TIMEOUT:.0f}s (hung?)"
    if res.error:
        return f"{path} could not be started: {res.error}"
    ver = launch.version(path)
    text = (ver.stdout + ver.stderr).strip()
    if text.startswith("Python 2"):
        return f"{path} is {text}: neuron-env needs a Python 3 target (python.version says which)"
    if res.returncode and res.returncode < 0:
        return f"{path} crashed (signal {-res.returncode}) while probing: {res.tail(300)}"
    if res.returncode:
        return f"{path} failed the probe (exit {res.returncode}): {res.tail(300)}"
    return f"{path} printed no probe result (is it a Python interpreter?): {res.tail(200)!r}"


def start_probe(flag: str | None) -> tuple[str, str, proc.Running]:
    """Start the probe in the target now; `finish_probe` collects it (doctor overlaps them)."""
    path, by = resolve_target(flag)
    return path, by, launch.spawn_probe(path, "probe.py", timeout=PROBE_TIMEOUT)


def probe_target(flag: str | None) -> TargetFacts:
    return finish_probe(*start_probe(flag))


def _json(text) -> tuple[object, str | None]:
    """(the document, None), (None, why it is not JSON), or (None, None) for no file: files
    the probe sends back as text (direct_url.json, the install manifest)."""
    if not isinstance(text, str):
        return None, None
    try:
        return json.loads(text), None
    except ValueError as e:
        return None, str(e)


def finish_probe(path: str, by: str, running: proc.Running) -> TargetFacts:
    res = running.result()
    doc = protocol.document(res.stdout) if res.ok else None
    if not isinstance(doc, dict) or not isinstance(doc.get("python"), dict):
        return TargetFacts(path=path, chosen_by=by, error=_why_unusable(path, res))
    py = doc["python"]
    dists, broken = {}, []
    for d in doc.get("distributions") or []:
        if not isinstance(d, dict):
            continue
        if d.get("broken") and not (d.get("name") and d.get("version")):
            broken.append(f"{d.get('location') or '?'}: {d['broken']}")
            continue
        key = canonicalize_name(str(d["name"]))
        direct, _ = _json(d.get("direct_url_text"))
        pinned = d.get("requires_pinned")
        dists[key] = Dist(str(d["name"]), str(d["version"]),
                          direct if isinstance(direct, dict) else None,
                          d.get("location"), bool(d.get("wrong_package_marker")),
                          tuple(str(x) for x in pinned) if isinstance(pinned, list) else ())
    manifest, bad = _json(doc.get("manifest_text"))
    manifest_error = f"{doc.get('manifest_path')} is not valid JSON: {bad}" if bad else None
    if doc.get("manifest_unreadable"):  # there, but not for this user (a 0600 root file)
        manifest_error = (f"the install manifest {doc.get('manifest_path')} cannot be read "
                          f"({doc['manifest_unreadable']}): whether the last install finished "
                          "is unknown; run doctor as its owner (root), or make it 0644")
    manifest = manifest if isinstance(manifest, dict) else None
    return TargetFacts(
        path=path, chosen_by=by, version=py.get("version"), executable=py.get("executable"),
        prefix=py.get("prefix"), venv=py.get("venv"), machine=py.get("machine"),
        dists=dists, broken=tuple(broken), manifest=manifest,
        manifest_path=doc.get("manifest_path"), manifest_error=manifest_error,
    )
