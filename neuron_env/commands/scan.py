"""`neuron-env scan PATH...`: what stands between a codebase and the native `neuron` device,
from the source alone (never importing or running it). Returns a Document."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import Any

from neuron_env.errors import UsageError
from neuron_env.report.envelope import envelope
from neuron_env.report.model import Document
from neuron_env.scan import document, engine, ruleset, views, walk

SCHEMA = document.SCHEMA
FAIL_ON = ("info", "warning", "error", "never")
PROGRESS_MIN = 200


def list_rules(matrix: str | None, select: list[str], ignore: list[str], fmt: str) -> Document:
    rs = ruleset.load(ruleset.locate(matrix))
    enabled = ruleset.select(rs, select, ignore)
    body = envelope(SCHEMA, 0, matrix={"release": rs.release, "source": rs.path},
                    rules=[rs.rules[i].serialize() for i in sorted(enabled)])
    # the rule list has no SARIF form: --list-rules --format sarif prints the list, as text
    return Document(body, views.rules_text, sarif=views.rules_text)


def run(paths: list[str], *, matrix: str | None = None, select: Sequence[str] = (),
        ignore: Sequence[str] = (), fail_on: str = "warning", exit_zero: bool = False,
        mode: str = "report", jobs: int | None = None,
        progress: Callable[[int, int], None] | None = None) -> Document:
    if fail_on not in FAIL_ON:
        raise UsageError(f"--fail-on {fail_on}: expected one of {', '.join(FAIL_ON)}")
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: expected 1 or more")
    if not paths:
        raise UsageError("no path to scan", hint="e.g. neuron-env scan src/")
    path = ruleset.locate(matrix)
    rs = ruleset.load(path)
    enabled = ruleset.select(rs, list(select), list(ignore))
    tasks, skipped = walk.discover(list(paths))
    results = engine.run(tasks, str(path), enabled, mode != "report", jobs, progress)
    settings = {"select": sorted(enabled), "fail_on": fail_on, "exit_zero": exit_zero,
                "mode": mode}
    extra: dict[str, Any] = {}
    changed = [r for r in results if r["new_text"] is not None]
    if mode == "diff":
        extra["diff"] = document.unified_diff(changed)
    elif mode == "fix" and changed:
        extra["fixes"] = apply_fixes(changed)
        again = engine.run([t for t in tasks if t.rel in extra["fixes"]["files"]], str(path),
                           enabled, False, 1)
        redo = {r["path"]: r for r in again}
        results = [redo.get(r["path"], r) for r in results]
    elif mode == "fix":
        extra["fixes"] = {"applied": 0, "files": [], "refused": []}
    body = document.body(rs, enabled, list(paths), results, skipped, settings, **extra)
    view = views.diff if mode == "diff" else views.text
    # a diff is for `patch`: a CRLF file's CR and a form feed stay as they are; SARIF is a
    # format of its own (report/formats.py), rendered by the one renderer from this view
    return Document(body, view, sarif=views.sarif,
                    raw_ok="\r\x0c" if view is views.diff else "")


def to_file(doc: Document, path: str, fmt: str) -> Document:
    """`--output PATH`: the report (in --format) written through the one safe writer
    (guards/atomic.write_output: a symbolic link, as one committed in the scanned repository,
    is refused, never written through; exit 2), and nothing on stdout; the exit code stays
    the scan's."""
    from neuron_env.errors import ConfigurationError
    from neuron_env.guards.atomic import write_output
    from neuron_env.report.render import render

    try:
        write_output(path, render(doc, fmt))
    except OSError as e:
        raise ConfigurationError(f"--output {path}: cannot write: {e.strerror or e}") from None
    return Document(doc.body, lambda body: "")


def apply_fixes(changed: list[dict]) -> dict[str, Any]:
    """Write each rewritten file atomically, in place of the REAL file (through a symlink the
    target is fixed and the link kept), with its owner, group and mode; a file that changed
    since it was read, or whose owner cannot be kept, is left alone and said so."""
    from neuron_env.guards.files import read_bounded
    from neuron_env.scan import source

    applied, files, refused = 0, [], []
    for r in changed:
        try:
            real = os.path.realpath(r["abs"])
            now = source.decode(read_bounded(real, walk.MAX_BYTES)).text
            if now != r["old_text"]:
                refused.append({"path": r["path"], "reason": "changed during the scan"})
                continue
            _write_atomic(real, source.encode(r["new_text"], r["encoding"]))
        except (OSError, UnicodeError) as e:
            refused.append({"path": r["path"], "reason": getattr(e, "why", None) or str(e)})
            continue
        applied += r["edits"]
        files.append(r["path"])
    return {"applied": applied, "files": files, "refused": refused}


class _Keep(OSError):
    """The rewrite would lose something of the file (its owner, its other hard links)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _write_atomic(path: str, data: bytes) -> None:
    """path (a real file, no symlink) replaced by data: a random exclusive temporary file in
    its directory (guards.atomic.temp_file), given the file's owner, group and mode, then renamed
    over it."""
    from neuron_env.guards import atomic

    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _Keep("not a regular file")
    if st.st_nlink > 1:
        raise _Keep(f"has {st.st_nlink} hard links: a rewrite would split them; not rewritten")
    fd, tmp = atomic.temp_file(os.path.dirname(path), prefix=".neuron-env-fix.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                try:
                    os.fchown(f.fileno(), st.st_uid, st.st_gid)
                except PermissionError:
                    raise _Keep(f"owned by uid {st.st_uid} gid {st.st_gid}: its owner cannot "
                                "be kept by this user; not rewritten") from None
            os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode))  # after chown (it clears setuid)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def terminal_progress(done: int, total: int) -> None:
    """Progress on a terminal's stderr for big trees (never in pipelines)."""
    if total >= PROGRESS_MIN and (done % 50 == 0 or done == total):
        sys.stderr.write(f"\rscanned {done}/{total} files")
        if done == total:
            sys.stderr.write("\r" + " " * 40 + "\r")
        sys.stderr.flush()
