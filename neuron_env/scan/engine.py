"""Scanning files: one file at a time (bytes -> text -> hits, and the rewritten text when fixes
are wanted), in this process or across a process pool. What comes back is plain data."""

from __future__ import annotations

import ast
import gc
import hashlib
import os
import symtable
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from neuron_env.guards.files import FileProblem, read_head
from neuron_env.scan import fixes, pyscan, ruleset, shscan, source
from neuron_env.scan.walk import MAX_BYTES, Task

_STATE: dict[str, Any] = {}
UTF_BOMS = tuple(b for b, _ in source.BOMS)
# (rule id, line, column, end line, end column, fixable, message, fingerprint)
Hit = tuple[str, int, int, int, int, bool, str | None, str | None]


def init(rules_path: str, enabled: frozenset[str], want_fix: bool) -> None:
    """Load the rules once per process (pool initializer, or in-process)."""
    rs = ruleset.load(Path(rules_path))
    _STATE.update(rs=rs, enabled=set(enabled), want_fix=want_fix, needles=pyscan.needles(rs))


def scan_task(task: Task) -> dict[str, Any]:
    """One file, with the cyclic garbage collector paused: a parse allocates a tree of
    thousands of nodes (no cycles among them, reference counting frees them) and every 700
    allocations would otherwise trigger a collection that walks them; it costs a bare parse
    loop ~20% of its time. Nothing a scan builds forms a cycle that has to wait for it."""
    was = gc.isenabled()
    gc.disable()
    try:
        return _scan_task(task)
    finally:
        if was:
            gc.enable()


def _scan_task(task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": task.rel, "abs": task.path, "kind": task.kind, "lines": 0, "hits": [],
        "skipped": None, "new_text": None, "old_text": None, "encoding": None, "edits": 0}
    try:  # regular files only (a FIFO swapped in since the walk never blocks), capped
        data = read_head(task.path, MAX_BYTES + 1)
    except FileProblem as e:
        out["skipped"] = e.why
        return out
    except OSError as e:
        out["skipped"] = f"unreadable: {e.strerror}"
        return out
    if len(data) > MAX_BYTES:
        out["skipped"] = f"larger than {MAX_BYTES // (1024 * 1024)} MiB"
        return out
    if b"\0" in data[:8192] and not data.startswith(UTF_BOMS):
        out["skipped"] = "binary (NUL bytes)"
        return out
    dec = source.decode(data)
    out["lines"] = dec.text.count("\n") + 1
    out["encoding"] = dec.encoding
    rs, enabled = _STATE["rs"], _STATE["enabled"]
    hits: list[Hit] = []
    if dec.note and "scan.encoding" in enabled:
        hits.append(("scan.encoding", 1, 1, 1, 1, False, dec.note, None))
    if task.kind == "python":
        hits += _python(task, dec, out)
    else:
        for rid, n, a, b in shscan.scan(dec.text, rs, enabled, docker=task.kind == "docker"):
            hits.append((rid, n, a + 1, n, b + 1, False, None, None))
    out["hits"] = sorted(set(hits), key=lambda h: (h[1], h[2], h[0]))
    return out


def _python(task: Task, dec: source.Decoded, out: dict[str, Any]) -> list[Hit]:
    rs, enabled = _STATE["rs"], _STATE["enabled"]
    relevant = pyscan.may_hit(_STATE["needles"], dec.text, task.package)
    if not relevant and ("scan.syntax" not in enabled or _syntax_ok(dec.text, task.rel)):
        return []  # no rule can match: only the syntax is checked
    try:
        tree = ast.parse(dec.text, filename=task.rel)
    except SyntaxError as e:
        if "scan.syntax" not in enabled:
            return []
        line = e.lineno or 1
        return [("scan.syntax", line, max(e.offset or 1, 1), line, max(e.offset or 1, 1),
                 False, f"{e.msg} (line {line})", None)]
    except (ValueError, RecursionError, MemoryError) as e:
        return [("scan.syntax", 1, 1, 1, 1, False, f"{type(e).__name__}: {e}", None)] \
            if "scan.syntax" in enabled else []
    if not relevant:
        return []
    an = pyscan.Analyzer(rs, enabled, dec.text, task.package)
    raw = an.run(tree)
    if not raw:
        return []
    lines = fixes.Lines(dec.text, an.fstrings)
    want_fix = _STATE["want_fix"] and not dec.lossy
    hits: list[Hit] = []
    edits: list[fixes.Edit] = []
    for rid, node in raw:
        rule = rs.rules[rid]
        fix = fixes.edit(rule, node, lines) if rule.fix else None
        if fix is not None and want_fix:
            edits.append(fix)
        line, byte_col, end_line, end_byte_col = fixes.position(node)
        col = lines.column(line, byte_col) + 1
        end_col = lines.column(end_line, end_byte_col) + 1
        hits.append((rid, line, col, end_line, end_col, fix is not None, None,
                     _fingerprint(rid, lines.line(line))))
    if edits:
        new, count = fixes.apply(dec.text, edits, fixes.import_point(tree, lines),
                                 an.module_binds_torch)
        new = fixes.drop_unused_imports(tree, new)
        out.update(new_text=new, old_text=dec.text, edits=count)
    return hits


def _syntax_ok(text: str, name: str) -> bool:
    """True when the text parses: Python's own parser, run by symtable, which skips building
    the Python objects of the tree (~30% of an ast.parse) and then checks a little more
    (`nonlocal` at module level...). So False is not the answer: ast.parse, run next, has
    the last word, as for every other file."""
    try:
        symtable.symtable(text, name, "exec")
    except Exception:  # SyntaxError, ValueError (NUL), RecursionError, MemoryError...
        return False
    return True


def _fingerprint(rid: str, line: str) -> str:
    return hashlib.sha256(f"{rid}\0{line.strip()}".encode("utf-8", "replace")).hexdigest()[:16]


def default_jobs(n_files: int) -> int:
    return 1 if n_files < 200 else max(1, min(os.cpu_count() or 1, 8))


def run(tasks: list[Task], rules_path: str, enabled: set[str], want_fix: bool,
        jobs: int | None = None, progress: Callable[[int, int], None] | None = None
        ) -> list[dict[str, Any]]:
    jobs = jobs or default_jobs(len(tasks))
    args = (rules_path, frozenset(enabled), want_fix)
    results: list[dict[str, Any]] = []
    if jobs <= 1 or len(tasks) <= 1:
        init(*args)
        it = map(scan_task, tasks)
        return _collect(it, len(tasks), progress, results)
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                             initargs=(*args, tasks)) as ex:
        for chunk in ex.map(_scan_range, _ranges(len(tasks), jobs)):
            for packed in chunk:
                task = tasks[len(results)]
                results.append(_unpack(task, packed))
                if progress is not None:
                    progress(len(results), len(tasks))
    return results


def _ranges(n: int, jobs: int) -> list[tuple[int, int]]:
    """Slices of the work list: each worker gets the list once (initializer: inherited on
    fork, pickled once per worker on spawn) and then only (start, stop) pairs, small enough
    to balance the load (~16 per worker), large enough that a round trip is rare."""
    size = max(1, min(256, n // (jobs * 16)))
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def _init_worker(rules_path: str, enabled: frozenset[str], want_fix: bool,
                 tasks: list[Task]) -> None:
    init(rules_path, enabled, want_fix)
    _STATE["tasks"] = tasks


# what goes back from a worker: no keys, no task fields the parent already has
Packed = tuple[int, list[Hit], str | None, str | None, str | None, str | None, int]
_PACKED = ("lines", "hits", "skipped", "new_text", "old_text", "encoding", "edits")


def _scan_range(span: tuple[int, int]) -> list[Packed]:
    tasks = _STATE["tasks"]
    out = []
    for i in range(*span):
        r = scan_task(tasks[i])
        out.append((r["lines"], r["hits"], r["skipped"], r["new_text"], r["old_text"],
                    r["encoding"], r["edits"]))
    return out


def _unpack(task: Task, packed: Packed) -> dict[str, Any]:
    r: dict[str, Any] = {"path": task.rel, "abs": task.path, "kind": task.kind}
    r.update(zip(_PACKED, packed, strict=True))
    return r


def _collect(it: Iterable[dict[str, Any]], total: int,
             progress: Callable[[int, int], None] | None,
             results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i, r in enumerate(it, 1):
        results.append(r)
        if progress is not None:
            progress(i, total)
    return results
