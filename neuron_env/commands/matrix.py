"""`neuron-env matrix list|show|validate|import`."""

from __future__ import annotations

from pathlib import Path

from neuron_env.errors import MatrixError, NeuronEnvError
from neuron_env.matrix import catalog
from neuron_env.matrix.loader import load_file
from neuron_env.matrix.model import Matrix, fmt_spec
from neuron_env.matrix.serialize import to_data
from neuron_env.report.envelope import envelope
from neuron_env.report.model import Document

SCHEMA = "neuron-env.matrix/1"


def list_doc(extra_dirs: list[Path]) -> Document:
    entries = catalog.available(extra_dirs)
    return Document(envelope("neuron-env.matrix-list/1", 0, matrices=[
        {"release": e.release, "path": str(e.path), "bundled": e.bundled, "default": i == 0,
         "origin": e.origin}
        for i, e in enumerate(entries)]), list_text)


def list_text(body: dict) -> str:
    if not body["matrices"]:
        return "no matrices found\n"
    lines = [f"{'RELEASE':<10} {'SOURCE':<9} PATH"]
    for e in body["matrices"]:
        tag = " (default)" if e["default"] else ""
        origin = e.get("origin") or ("bundled" if e["bundled"] else "dir")
        lines.append(f"{e['release']:<10} {origin:<9} "
                     f"{e['path']}{tag}")
    return "\n".join(lines) + "\n"


def show_doc(release: str | None, extra_dirs: list[Path], verbose: bool = False) -> Document:
    m = catalog.select(release, extra_dirs)
    return Document(show_data(m), lambda _body: show_text(m) + (
        sources_text(m) if verbose else ""))


def sources_text(m: Matrix) -> str:
    """`matrix show -v`: every source, what it covers, and the facts that cite it."""
    out = ["", "Sources"]
    for s in m.sources:
        out.append(f"  [{s.id}] {s.title or s.url}")
        out.append(f"      {s.url}")
        out.append(f"      covers: {', '.join(s.covers)}")
        cited = [t.name for f in m.instances for t in f.types if t.source == s.id]
        cited += [f"{o.label} ({'disputed: ' if o.disputed_source == s.id else ''}"
                  f"{o.disputed_status if o.disputed_source == s.id else o.status})"
                  for o in m.os if s.id in (o.source, o.disputed_source)]
        cited += [f"{a.name} {a.version or ''}".strip() + ("" if a.confirmed else " (unconfirmed)")
                  for a in m.driver.apt if a.source == s.id]
        if cited:
            out.append(f"      cited by: {', '.join(cited)}")
        if s.note:
            out.append(f"      note: {s.note}")
    unsourced = [t.name for f in m.instances for t in f.types if not t.source]
    if unsourced and m.sources and not any("*" in s.covers for s in m.sources):
        out.append(f"  no source named for: {', '.join(unsourced)} (see their family's source)")
    return "\n".join(out) + "\n"


def show_data(m: Matrix) -> dict:
    return envelope(SCHEMA, 0, matrix={"release": m.release, "source": m.source,
                                       "bundled": m.bundled}, content=to_data(m))


def show_text(m: Matrix) -> str:
    out = [f"Neuron {m.release} ({m.status}, {m.backend} backend"
           + (f", {m.date}" if m.date else "") + ")", f"  {m.summary}",
           f"  source: {m.source}", ""]
    out.append(f"Python          {fmt_spec(m.python)}")
    out.append(f"Architecture    {', '.join(m.architectures)}")
    out.append("")
    out.append(f"{'OS':<16}{'STATUS':<16}{'WHEELS':<8}NOTE")
    for o in m.os:
        wheels = {True: "yes", False: "no", None: "?"}[o.wheels]
        out.append(f"{o.label:<16}{o.status:<16}{wheels:<8}{o.message or ''}")
    out.append("")
    out.append(f"{'INSTANCES':<16}{'STATUS':<16}{'TYPES (devices x cores, GiB/device)'}")
    for f in m.instances:
        types = ", ".join(
            f"{t.name} ({t.devices or '?'}x{t.cores_per_device or '?'}, "
            f"{t.memory_per_device_gib or '?'}){'' if t.confirmed else '*'}" for t in f.types)
        status = "supported" if f.supported else "unsupported"
        out.append(f"{f.family:<16}{status:<16}{types or (f.reason or '')[:70]}")
    if any(not t.confirmed for f in m.instances for t in f.types):
        out.append("  * not confirmed by AWS docs")
    out.append("")
    out.append(f"{'TORCH':<16}{'TORCH-NEURONX':<24}PYTHON")
    for p in m.pairs_newest_first():
        out.append(f"{p.torch!s:<16}{fmt_spec(p.torch_neuronx):<24}"
                   f"{fmt_spec(p.python) or fmt_spec(m.python)}")
    if m.companions:
        out.append(f"also installed: {', '.join(c.requirement for c in m.companions)}")
    out.append("")
    out.append("Indexes")
    for i in m.indexes:
        out.append(f"  {i.name:<12} {i.url}  ({', '.join(i.packages)})"
                   + (f"  override: ${i.env}" if i.env else ""))
    if m.placeholders:
        out.append("Public-index placeholders refused: "
                   + ", ".join(f"{p.name} {p.version}" for p in m.placeholders))
    if m.limitations:
        out.append("Known limitations")
        out += [f"  - {x.summary}" for x in m.limitations]
    if m.driver.apt:
        out.append("Driver packages: " + ", ".join(
            a.name + (f" {a.version}" if a.version else "")
            + (f" ({'/'.join(a.families)})" if a.families else "") for a in m.driver.apt))
    if m.stack:
        rows: dict[tuple[str, str], list[str]] = {}
        for x in m.stack:
            rows.setdefault((x.name, x.version), []).extend([x.torch] if x.torch else [])
        out.append("Python stack: " + ", ".join(
            f"{n} {v}" + (f" (torch {', '.join(t)})" if t else "") for (n, v), t in rows.items()))
    if m.docs:
        out.append("Docs")
        out += [f"  {k}: {v}" for k, v in m.docs]
    return "\n".join(out) + "\n"


def validate(paths: list[Path]) -> tuple[list[dict], int]:
    """Every file's problems, and the exit code (0 all valid, 2 otherwise)."""
    results, code = [], 0
    for p in paths:
        targets = catalog.scan(p) if p.is_dir() else [None]
        if p.is_dir() and not targets:
            results.append({"path": str(p), "valid": False, "problems": [
                {"file": str(p), "path": "", "line": None,
                 "message": "directory holds no matrix files (neuron-<release>.toml)"}]})
            code = 2
            continue
        for e in targets:
            f = e.path if e else p
            try:
                m = load_file(f)
                results.append({"path": str(f), "valid": True, "release": m.release,
                                "problems": []})
            except MatrixError as err:
                results.append({"path": str(f), "valid": False,
                                "problems": [x.to_dict() for x in err.problems]})
                code = 2
            except NeuronEnvError as err:
                results.append({"path": str(f), "valid": False, "problems": [
                    {"file": str(f), "path": "", "line": None, "message": err.message}]})
                code = 2
    return results, code


def validate_doc(paths: list[Path]) -> Document:
    results, code = validate(paths)
    return Document(envelope("neuron-env.matrix-validate/1", code, files=results),
                    validate_text)


def validate_text(body: dict) -> str:
    out = []
    for r in body["files"]:
        if r["valid"]:
            out.append(f"ok       {r['path']} (Neuron {r['release']})")
        else:
            out.append(f"invalid  {r['path']}: {len(r['problems'])} problem(s)")
            for p in r["problems"]:
                where = p["file"] + (f":{p['line']}" if p.get("line") else "")
                key = f" [{p['path']}]" if p.get("path") else ""
                out.append(f"    {where}{key}: {p['message']}")
    return "\n".join(out) + "\n"


def import_doc(manifest: Path, out_dir: Path, releases: list[str], dry_run: bool) -> Document:
    written, skipped = import_manifest(manifest, out_dir, releases, dry_run)
    return Document(envelope("neuron-env.matrix-import/1", 0, dry_run=dry_run, written=written,
                             skipped=[list(s) for s in skipped]), import_text)


def import_text(body: dict) -> str:
    verb = "would write" if body["dry_run"] else "wrote"
    n = len(body["written"])
    lines = [f"{verb} {w}" for w in body["written"]]
    lines += [f"skipped {rel}: {why}" for rel, why in body["skipped"]]
    lines.append(f"{verb} {n} matri{'x' if n == 1 else 'ces'}, skipped "
                 f"{len(body['skipped'])} release(s)")
    return "\n".join(lines) + "\n"


def import_manifest(manifest: Path, out_dir: Path, releases: list[str], dry_run: bool
                    ) -> tuple[list[str], list[tuple[str, str]]]:
    """Convert, check EVERY matrix (importer.render), then write all files or none: into a
    temporary directory inside `out_dir` first, then each renamed into place."""
    from neuron_env.matrix.importer import convert, load_manifest, render

    res = convert(load_manifest(manifest), str(manifest), releases or None)
    rendered = render(res)
    written = [str(out_dir / f"neuron-{m.release}.toml") for m, _ in rendered]
    if not dry_run and rendered:
        _write_all(out_dir, [(f"neuron-{m.release}.toml", text) for m, text in rendered])
    return written, list(res.skipped)


def _write_all(out_dir: Path, files: list[tuple[str, str]]) -> None:
    """All the imported files or none (guards/atomic.write_all: a private staging directory in
    --out, then renamed into place; an error is a ConfigurationError naming --out)."""
    from neuron_env.guards.atomic import write_all

    write_all(out_dir, files, flag="--out")
