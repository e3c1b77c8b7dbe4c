"""I/O: gather the bundle's members as (name, text, note). Every text is masked for credentials
on the way in; a source that cannot be read becomes a member that says why."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat

from neuron_env.guards import proc, redact
from neuron_env.target_python import launch

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


def _open_dir(name: str, dir_fd: int | None) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                   dir_fd=dir_fd)


def _read_member(dir_fd: int, name: str, owners: set[int]) -> tuple[str | None, str]:
    """(text, "") of a regular file that is no symlink and belongs to one of `owners`, opened
    relative to its directory's descriptor (no path can be swapped under us); else (None,
    why it was left out)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError as e:
        why = "is a symbolic link" if e.errno == errno.ELOOP else (e.strerror or str(e))
        return None, why
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "is not a regular file"
        if st.st_uid not in owners:
            return None, (f"belongs to uid {st.st_uid}, not to the environment's owner "
                          f"(uid {min(owners - {0}, default=0)}) or root")
        os.lseek(fd, max(0, st.st_size - 2 * MAX_BYTES), os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "replace"), ""
    finally:
        os.close(fd)


def logs(prefix: str | None) -> tuple[list[tuple[str, str, str]], list[dict[str, str]]]:
    """neuron-env's install logs (the newest MAX_LOGS) and the install manifest of `prefix`:
    only regular files, no symlinks (neither the files nor `.neuron-env` and `logs`), owned by
    the environment's owner or root. Returns (members, what was left out and why)."""
    if not prefix:
        return [], []
    out: list[tuple[str, str, str]] = []
    left: list[dict[str, str]] = []
    state = os.path.join(prefix, ".neuron-env")
    try:
        owners = {os.stat(prefix).st_uid, 0}
        sfd = _open_dir(state, None)
    except FileNotFoundError:
        return [], []
    except OSError as e:
        why = "is a symbolic link" if e.errno in (errno.ELOOP, errno.ENOTDIR) else (
            e.strerror or str(e))
        return [], [{"path": state, "reason": why}]
    try:
        names: list[tuple[int, str, str]] = []  # (directory fd, name, shown path)
        try:
            lfd: int | None = _open_dir("logs", sfd)
        except FileNotFoundError:
            lfd = None
        except OSError as e:
            lfd = None
            left.append({"path": os.path.join(state, "logs"), "reason": (
                "is a symbolic link" if e.errno in (errno.ELOOP, errno.ENOTDIR)
                else e.strerror or str(e))})
        if lfd is not None:
            found = []
            with os.scandir(lfd) as it:
                for ent in it:
                    if ent.name.endswith(".log"):
                        with contextlib.suppress(OSError):
                            found.append((ent.stat(follow_symlinks=False).st_mtime, ent.name))
            for _, n in sorted(found)[-MAX_LOGS:]:
                names.append((lfd, n, os.path.join(state, "logs", n)))
        names.append((sfd, "install-manifest.json", os.path.join(state,
                                                                 "install-manifest.json")))
        for dfd, n, shown in names:
            text, why = _read_member(dfd, n, owners)
            if text is not None:
                out.append(member(f"neuron-env/{n}", text, shown))
            elif why != "No such file or directory" or n != "install-manifest.json":
                left.append({"path": shown, "reason": why})
        if lfd is not None:
            os.close(lfd)
    finally:
        os.close(sfd)
    return out, left
