"""Trust by owner: the one rule for every file or directory that chooses what gets installed or
run (the user's matrix directory and its files, the matrix parse cache, the compile cache, run
directories). Such a path is used only when it is owned by the running user or root and is
writable by no one else (no group/other write bit; a sticky directory such as /tmp may be
world-writable). Anything else is ignored (with a warning naming it and why), never trusted:
as root with an inherited HOME, a file another user could write would choose the index
`install` uses. See docs/security.md ("Trust by owner")."""

from __future__ import annotations

import os
import stat
import sys


def why_untrusted(st: os.stat_result, *, uid: int | None = None) -> str | None:
    """Why a file or directory with this `lstat`/`fstat` must not be trusted, or None (it may).
    `uid`: the running (effective) user, by default os.geteuid()."""
    me = os.geteuid() if uid is None else uid
    if st.st_uid not in (me, 0):
        return f"owned by uid {st.st_uid}, not by this user (uid {me}) or root"
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode) and mode & stat.S_ISVTX and st.st_uid == 0:
        return None  # /tmp-like: others may create entries, never replace root's or ours
    if mode & 0o022:
        return f"writable by group or others (mode {mode:o})"
    return None


def why_not_owner(st: os.stat_result) -> str | None:
    """Why a file (in a directory `why_untrusted` trusts) is not one to read: owned by neither
    the running user nor root (a file another user planted in root's sticky /tmp)."""
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return f"owned by uid {st.st_uid}, not by this user (uid {me}) or root"
    return None


def why_untrusted_path(path: str | os.PathLike[str], *, kind: str = "") -> str | None:
    """`why_untrusted` for a path (never followed: a symbolic link is untrusted itself).
    `kind`: "file" or "dir" to also require that type. A missing path is None: nothing to use."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be inspected: {e.strerror or e}"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link (not followed)"
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    return why_untrusted(st)


def warn_untrusted(what: str, path: str | os.PathLike[str], why: str) -> None:
    """The one warning: `neuron-env: warning: ignoring WHAT PATH: WHY`."""
    from neuron_env.guards.text import clean

    sys.stderr.write(f"neuron-env: warning: ignoring {what} {clean(str(path), one_line=True)}: "
                     f"{why}\n")
