"""I/O: gather the bundle's members as (name, text, note). Every text is masked for credentials
on the way in; a source that cannot be read becomes a member that says why."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from neuron_env.target import launch
from neuron_env.util import proc, redact

DMESG = re.compile(r"neuron|nrt|\bnd\d|1d0f|aws-neuronx|efa", re.I)
MAX_LOGS = 5
MAX_BYTES = 2_000_000  # per member: a runaway log must not make the archive unsendable


def member(name: str, text: str, note: str = "") -> tuple[str, str, str]:
    text = redact.text(text)
    if len(text) > MAX_BYTES:
        text, note = text[-MAX_BYTES:], (note + "; " if note else "") + "truncated to its end"
    return name, text, note


def command(name: str, argv: list[str], timeout: float = 30.0,
            keep=None) -> tuple[str, str, str]:
    return _said(name, " ".join(argv), proc.run(argv, timeout=timeout), keep)


def _said(name: str, shown: str, res: proc.Completed, keep=None) -> tuple[str, str, str]:
    if res.error or res.timed_out or res.returncode:
        why = res.error or ("timed out" if res.timed_out else f"exit {res.returncode}")
        return member(name, f"$ {shown}\n({why})\n{res.tail(2000)}", f"{shown}: {why}")
    out = res.stdout
    if keep is not None:
        out = "".join(ln for ln in out.splitlines(keepends=True) if keep.search(ln))
    return member(name, out, shown)


def dmesg() -> tuple[str, str, str]:
    if shutil.which("dmesg") is None:
        return member("dmesg-neuron.txt", "(dmesg not found)\n", "dmesg not found")
    return command("dmesg-neuron.txt", ["dmesg", "--ctime"], timeout=10, keep=DMESG)


def neuron_ls(target: dict) -> tuple[str, str, str]:
    """`target`: doctor's JSON target; neuron-ls runs again with the flag that answered."""
    nl = target.get("neuron_ls")
    if not nl or not nl.get("path"):
        why = (nl or {}).get("error") or "not asked (--root, or doctor did not run)"
        return member("neuron-ls.json", f"({why})\n", why)
    return command("neuron-ls.json", [nl["path"], *(nl.get("args") or "-j").split()], timeout=10)


def packages(target: dict) -> list[tuple[str, str, str]]:
    py = target.get("interpreter") or {}
    out = [member("packages-target.txt", "".join(
               f"{k}=={v}\n" for k, v in (target.get("packages") or {}).items()),
               f"distributions in {py.get('path')}"),
           member("packages-apt.txt", "".join(
               f"{k} {v}\n" for k, v in sorted(((target.get("driver") or {}).get(
                   "apt_packages") or {}).items())), "Neuron apt packages (dpkg status)")]
    if py.get("version"):
        out.append(_said("pip-list.txt", f"{py['path']} -m pip list",
                         launch.run_tool(py["path"], ["-m", "pip", "list"], timeout=60)))
    return out


def logs(prefix: str | None) -> list[tuple[str, str, str]]:
    if not prefix:
        return []
    state = Path(prefix) / ".neuron-env"
    files = sorted((state / "logs").glob("*.log"), key=lambda p: p.stat().st_mtime)[-MAX_LOGS:]
    if (state / "install-manifest.json").is_file():
        files.append(state / "install-manifest.json")
    out = []
    for f in files:
        try:
            out.append(member(f"neuron-env/{f.name}", f.read_text(errors="replace"), str(f)))
        except OSError as e:
            out.append(member(f"neuron-env/{f.name}", f"({e})\n", str(f)))
    return out
