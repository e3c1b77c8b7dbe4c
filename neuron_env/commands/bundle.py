"""`neuron-env bundle`: the doctor report (JSON and markdown), package lists, neuron-ls, the
relevant dmesg lines and neuron-env's logs in one .tar.gz, credentials masked, its content
listed (on stderr) before it is written."""

from __future__ import annotations

import io
import re
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from neuron_env.bundle import collect
from neuron_env.guards.text import clean
from neuron_env.report.envelope import envelope
from neuron_env.report.model import Document

SCHEMA = "neuron-env.bundle/1"


@dataclass(frozen=True)
class BundleOptions:
    out: str | None = None
    python: str | None = None
    matrix: str | None = None
    root: str | None = None
    list_only: bool = False


def _doctor(opts: BundleOptions):
    from neuron_env.commands.doctor import DoctorOptions, run
    from neuron_env.errors import NeuronEnvError
    from neuron_env.report.render import render, render_error

    try:
        rep = run(DoctorOptions(matrix=opts.matrix, python=opts.python, root=opts.root))
    except NeuronEnvError as e:
        err = e.to_dict()
        return None, [collect.member("doctor.json", render_error(
            "neuron-env.doctor/1", e.exit_code, err, "json"), "doctor failed")]
    return rep, [collect.member("doctor.json", render(rep, "json"), "doctor --format json"),
                 collect.member("doctor.md", render(rep, "markdown"), "doctor --format markdown")]


def _members(opts: BundleOptions) -> tuple[list[tuple[str, str, str]], list[dict[str, str]]]:
    rep, members = _doctor(opts)
    target = rep.target if rep else {}
    members += collect.packages(target)
    members.append(collect.neuron_ls(target))
    members.append(collect.dmesg())
    logs, left_out = collect.logs((target.get("interpreter") or {}).get("prefix"))
    return members + logs, left_out


_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


def safe_name(name: str, fallback: str = "member") -> str:
    """A member name that extracts where it says: every part a plain file name (no `..`, no
    `/` at the start, no control character, nothing a shell or terminal reads: `_` instead)."""
    parts = [_SAFE.sub("_", p) for p in name.split("/")]
    parts = [p for p in parts if p.strip(".")]  # "", ".", ".." and "..." are no names
    return "/".join(parts) or fallback


def _write(path: Path, members: list[tuple[str, str, str]]) -> None:
    """The archive is made in memory (members are capped) and written as any output the user
    names (guards/atomic.write_output): a random exclusive temporary file renamed into place,
    mode 0600 like its members (it holds logs and host details)."""
    from neuron_env.guards.atomic import write_output

    top = safe_name(path.name.removesuffix(".tar.gz"), "neuron-env-bundle")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text, _ in members:
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{top}/{safe_name(name)}")
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
            tar.addfile(info, io.BytesIO(data))
    write_output(path, buf.getvalue(), mode=0o600)


def run(opts: BundleOptions) -> Document:
    members, left_out = _members(opts)
    out = Path(opts.out or time.strftime("neuron-env-bundle-%Y%m%dT%H%M%S.tar.gz"))
    members = [(safe_name(n), t, note) for n, t, note in members]
    listing = [{"name": n, "bytes": len(t.encode()), "source": note} for n, t, note in members]
    # file names from the environment's owner: escaped before they reach a terminal
    sys.stderr.write(clean(f"bundle {out}:\n" + "".join(
        f"  {m['name']:<28} {m['bytes']:>9} B  {clean(m['source'], one_line=True)}\n"
        for m in listing)))
    sys.stderr.write("".join(clean(f"  left out {x['path']}: {x['reason']}", one_line=True)
                             + "\n" for x in left_out))
    if not opts.list_only:
        _write(out, members)
    body = envelope(SCHEMA, 0, out=str(out.resolve()), written=not opts.list_only,
                    members=listing, left_out=left_out,
                    masked="credentials are masked: URL user:token@, Authorization headers, "
                           "AWS secret keys, token query parameters")
    return Document(body, text)


def text(doc: dict) -> str:
    verb = "wrote" if doc["written"] else "would write (--list)"
    left = "".join(f"left out {x['path']}: {x['reason']}\n" for x in doc.get("left_out") or [])
    return left + (f"{verb} {doc['out']} ({len(doc['members'])} files; {doc['masked']}): "
                   "attach it to the GitHub issue or the AWS support case\n")
