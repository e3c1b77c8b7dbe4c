"""--venv DIR: use it when it exists, create it (with the chosen interpreter) when it does not."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from neuron_env.errors import ConfigurationError, InterpreterError
from neuron_env.util import proc

VENV_TIMEOUT = 300.0


def venv_python(d: Path) -> Path:
    return d / "bin" / "python"


def existing(d: Path) -> str | None:
    """The venv's python when DIR is a venv; None when DIR is absent (or an empty directory)."""
    if not d.exists():
        return None
    if not d.is_dir():
        raise ConfigurationError(f"--venv {d}: exists and is not a directory",
                                 hint="choose another --venv path")
    if (d / "pyvenv.cfg").is_file() and venv_python(d).exists():
        return str(venv_python(d))
    if any(d.iterdir()):
        raise ConfigurationError(f"--venv {d}: exists but is not a virtual environment "
                                 "(no pyvenv.cfg or bin/python)",
                                 hint="choose an empty or new directory, or an existing venv")
    return None


def remove_made(d: Path, keep_dir: bool = False) -> None:
    """Remove a venv this run made (the install into it failed): the directory too, unless it
    existed (empty) before the run."""
    if not keep_dir:
        shutil.rmtree(d, ignore_errors=True)
        return
    for child in d.iterdir():
        shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()


def create(d: Path, base_python: str) -> str:
    """Create the venv; on failure remove what was made (never leave half a venv)."""
    made_dir = not d.exists()
    r = proc.run([base_python, "-m", "venv", str(d)], timeout=VENV_TIMEOUT)
    if not r.ok:
        remove_made(d, keep_dir=not made_dir)
        why = "timed out" if r.timed_out else (r.error or r.tail(300))
        raise InterpreterError(f"could not create the venv {d} with {base_python}: {why}",
                               hint="on Debian/Ubuntu: apt-get install python3-venv (or "
                                    "python3.12-venv); or choose another --python")
    py = venv_python(d)
    if not os.access(py, os.X_OK):
        raise InterpreterError(f"the new venv {d} has no bin/python", hint="see above")
    return str(py)
