"""--venv DIR: use it when it exists, create it (with the chosen interpreter) when it does not."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from pathlib import Path

from neuron_env.errors import ConfigurationError, InterpreterError
from neuron_env.guards.atomic import safe_umask
from neuron_env.target_python import launch

VENV_TIMEOUT = 300.0


def venv_python(d: Path) -> Path:
    return d / "bin" / "python"


MARKER = ".neuron-env-venv-incomplete"  # in a venv being created; removed once it is complete


def existing(d: Path) -> str | None:
    """The venv's python when DIR is a venv; None when DIR is absent, an empty directory, or a
    venv whose creation was interrupted (MARKER still there: create() starts it again)."""
    if not d.exists():
        return None
    if not d.is_dir():
        raise ConfigurationError(f"--venv {d}: exists and is not a directory",
                                 hint="choose another --venv path")
    if os.path.lexists(d / MARKER):
        return None
    if (d / "pyvenv.cfg").is_file() and venv_python(d).exists():
        return str(venv_python(d))
    if any(d.iterdir()):
        raise ConfigurationError(f"--venv {d}: exists but is not a virtual environment "
                                 "(no pyvenv.cfg or bin/python)",
                                 hint="choose an empty or new directory, or an existing venv")
    return None


def remove(d: Path, made_dir: bool) -> None:
    """Undo a venv neuron-env created: the directory when it made it, else (an empty directory
    the user gave) its contents."""
    if made_dir:
        shutil.rmtree(d, ignore_errors=True)
    elif d.is_dir():
        _clear(d)


def _clear(d: Path) -> None:
    for child in d.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink()


def _why(e: OSError | str) -> tuple[str, str]:
    """(the real cause, what to do) of a venv that could not be made."""
    text = str(e).lower()
    if (isinstance(e, OSError) and e.errno == errno.EROFS) or "read-only file system" in text:
        return ("the directory is on a read-only file system",
                "choose a --venv DIR on a writable file system")
    if (isinstance(e, OSError) and e.errno in (errno.EACCES, errno.EPERM)) \
            or "permission denied" in text:
        return ("permission denied", "choose a --venv DIR you can write, or run as its owner")
    if (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "no space left" in text:
        return ("no space left on the device", "free disk space, or choose another --venv DIR")
    if "ensurepip" in text or "no module named venv" in text:
        return ("this Python has no venv/ensurepip module",
                "on Debian/Ubuntu: apt-get install python3-venv (or python3.12-venv); or "
                "choose another --python")
    why = e.strerror or str(e) if isinstance(e, OSError) else str(e)
    return why, "see the message above; or choose another --python or --venv DIR"


def create(d: Path, base_python: str) -> str:
    """Create the venv under MARKER (removed only once it is complete, so an interrupted one is
    never mistaken for a good one); on failure remove what was made (never half a venv)."""
    with safe_umask():
        return _create(d, base_python)


def _create(d: Path, base_python: str) -> str:
    made_dir = not d.exists()
    try:
        if os.path.lexists(d / MARKER):  # an interrupted creation: start again
            _clear(d)
        d.mkdir(parents=True, exist_ok=True)
        os.close(os.open(d / MARKER, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o644))
    except OSError as e:
        what, fix = _why(e)
        raise InterpreterError(f"could not create the venv {d}: {what}", hint=fix) from None
    r = launch.run_tool(base_python, ["-m", "venv", str(d)], timeout=VENV_TIMEOUT)
    if not r.ok:
        remove(d, made_dir)
        what, fix = _why("timed out" if r.timed_out else (r.error or r.tail(300)))
        raise InterpreterError(f"could not create the venv {d} with {base_python}: {what}",
                               hint=fix)
    py = venv_python(d)
    if not os.access(py, os.X_OK):
        raise InterpreterError(f"the new venv {d} has no bin/python", hint="see above")
    os.unlink(d / MARKER)
    return str(py)
