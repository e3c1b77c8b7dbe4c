"""Issue #36, "one writer for every path a user names" (finding 1): guards/atomic.py is THE writer.

The CLI is walked (every command of the typer app, every click parameter): an option that names
a path is either an output (checked while parsing by the writer's own check, and written by
it) or an input listed here; a new path option fails until it is classified. Each output
option is then run in-process against a FIFO, a symbolic link and a device: exit 2, target
untouched. The source of neuron_env/ is walked too: nothing but guards/atomic.py opens a file for
writing or renames one into place, except the listed sites (each with its reason).
"""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neuron_env.cli import COMMANDS, app, lazy
from neuron_env.errors import EXIT_CONFIG, RefusedPath
from neuron_env.guards import atomic

REPO = Path(__file__).resolve().parents[2]

# (command path, option): what a path option is. OUTPUTS must go through the one writer.
OUTPUTS = {("doctor", "--report"), ("trial", "--report"), ("trial", "--save-baseline"),
           ("bundle", "--out"), ("matrix import", "--out"), ("matrix update", "--dir"),
           ("scan", "--output")}
INPUTS = {  # read, never written: guards/files.py (the one reader) or a directory/interpreter
    ("doctor", "--matrix"), ("doctor", "--python"), ("doctor", "--root"),
    ("doctor", "--waivers"), ("install", "--matrix"), ("install", "--python"),
    ("install", "--root"), ("install", "--find-links"),
    ("smoke", "--python"), ("trial", "--python"), ("trial", "--baseline"),
    ("trial", "--collect"), ("scan", "paths"), ("scan", "--matrix"), ("collectives", "--python"),
    ("fleet report", "inputs"), ("bundle", "--python"), ("bundle", "--matrix"),
    ("bundle", "--root"), ("instance", "--matrix"), ("instance", "--root"),
    ("matrix list", "--matrix-dir"), ("matrix show", "--matrix-dir"),
    ("matrix validate", "paths"), ("matrix import", "manifest"),
    ("matrix update", "--ca-bundle"), ("matrix update", "--manifest-key"),
}
# directories neuron-env builds in with their own rules (docs/security.md, "Inside the
# environment"): the venv's state directory and lock refuse links, logs are created exclusively
ENVIRONMENTS = {("install", "--venv")}
PATHLIKE = ("FILE", "PATH", "DIR", "RUN_DIR", "PEM")
# the smallest argv that parses up to the option, per command
REQUIRED = {"trial": ["builtin:mlp"], "matrix import": ["MANIFEST"], "matrix update": [],
            "scan": ["."]}


def walk() -> Iterator[tuple[str, object]]:
    def go(cmd, path):
        if hasattr(cmd, "commands"):
            for name in list(cmd.commands):
                yield from go(cmd.commands[name], [*path, name])
        else:
            for p in cmd.params:
                yield " ".join(path), p
    yield from go(lazy.command(app, COMMANDS), [])


def _flag(p) -> str:
    longs = [o for o in p.opts if o.startswith("--")]
    return longs[0] if longs else p.name


def _pathlike(p) -> bool:
    meta = (p.metavar or "").upper()
    return getattr(p.type, "name", "") == "path" or any(w in meta for w in PATHLIKE)


def test_every_path_option_is_classified_and_every_output_uses_the_one_writer():
    seen, unknown, unchecked = set(), [], []
    for cmd, p in walk():
        key = (cmd, _flag(p))
        if key in OUTPUTS:
            seen.add(key)
            if not getattr(p.callback, "neuron_env_output", False):
                unchecked.append(key)
        elif _pathlike(p) and key not in INPUTS | ENVIRONMENTS:
            unknown.append(key)
    assert not unknown, f"path options neither in OUTPUTS nor INPUTS: {unknown}"
    assert not unchecked, f"output options not checked by guards/atomic.check_output: {unchecked}"
    assert seen == OUTPUTS, f"listed outputs the CLI does not have: {OUTPUTS - seen}"


def _target(kind: str, tmp_path: Path) -> tuple[Path, object]:
    """A path of `kind` and a snapshot of what it is (to prove it untouched)."""
    victim = tmp_path / "victim"
    victim.write_text("KEEP\n")
    if kind == "fifo":
        t = tmp_path / "fifo"
        os.mkfifo(t)
    elif kind == "link":
        t = tmp_path / "link"
        t.symlink_to(victim)
    elif kind == "dangling":
        t = tmp_path / "dangling"
        t.symlink_to(tmp_path / "nowhere")
    elif kind == "socket":
        t = tmp_path / "sock"
        os.mknod(t, stat.S_IFSOCK | 0o600)
    else:
        t = Path("/dev/null")
    st = os.lstat(t)
    return t, (st.st_mode, st.st_ino, st.st_rdev, victim.read_text())


@pytest.mark.parametrize("kind", ["fifo", "link", "dangling", "socket", "device"])
@pytest.mark.parametrize("cmd, flag", sorted(OUTPUTS))
def test_every_output_option_refuses_a_special_target_untouched(tmp_path, monkeypatch, cmd,
                                                               flag, kind):
    monkeypatch.chdir(tmp_path)
    target, before = _target(kind, tmp_path)
    if flag == "--dir" or (cmd, flag) == ("matrix import", "--out"):
        if kind in ("dangling", "device"):  # a directory option: a link to a dir, a file
            pytest.skip("covered by the link and FIFO cases")
        if kind == "link":
            (tmp_path / "realdir").mkdir()
            target.unlink()
            target.symlink_to(tmp_path / "realdir")
            before = (*before[:3], "KEEP\n")
    value = f"json:{target}" if flag == "--report" else str(target)
    args = [*cmd.split(), *[a.replace("MANIFEST", str(tmp_path / "victim"))
                            for a in REQUIRED.get(cmd, [])], flag, value]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == EXIT_CONFIG, (args, r.output)
    assert "not a regular file" in r.output or "symbolic link" in r.output \
        or "not a directory" in r.output, r.output
    st = os.lstat(target)
    assert (st.st_mode, st.st_ino, st.st_rdev, (tmp_path / "victim").read_text()) == before


@pytest.mark.parametrize("target", ["/dev/fd/\u00b2", "/proc/self/fd/99999999999999999999",
                                    "/dev/fd/1\u0663"])
@pytest.mark.parametrize("cmd, flag", sorted(OUTPUTS))
def test_an_output_naming_no_descriptor_is_a_usage_error(tmp_path, monkeypatch, cmd, flag,
                                                         target):
    """#45 finding 9: a non-ASCII digit or an unbounded number after /dev/fd/ was a traceback
    (exit 1 or 3); any failure in an option callback is a usage error (exit 2)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "victim").write_text("{}")
    value = f"json:{target}" if flag == "--report" else target
    args = [*cmd.split(), *[a.replace("MANIFEST", str(tmp_path / "victim"))
                            for a in REQUIRED.get(cmd, [])], flag, value]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == EXIT_CONFIG, (args, r.output, r.exception)
    assert "Traceback" not in r.output


def test_own_descriptor_reads_ascii_digits_only():
    assert atomic.own_descriptor("/dev/fd/7") == 7
    assert atomic.own_descriptor("/dev/fd/\u00b2") is None
    assert atomic.own_descriptor("/proc/self/fd/" + "9" * 20) is None


# -- the writer itself -------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "link", "dangling", "socket", "device"])
def test_write_output_refuses_and_leaves_the_target_untouched(tmp_path, kind):
    target, before = _target(kind, tmp_path)
    with pytest.raises(RefusedPath) as e:
        atomic.write_output(target, "{}\n")
    assert e.value.exit_code == EXIT_CONFIG and isinstance(e.value, OSError)
    st = os.lstat(target)
    assert (st.st_mode, st.st_ino, st.st_rdev, (tmp_path / "victim").read_text()) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temp file stayed"


def test_write_output_keeps_the_mode_the_caller_asked_for(tmp_path):
    old = os.umask(0)
    try:
        atomic.write_output(tmp_path / "a", b"x", mode=0o600)
        atomic.write_output(tmp_path / "b", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "b").st_mode) == 0o644


def test_a_pending_output_whose_target_became_a_link_is_refused_at_commit(tmp_path):
    victim, target = tmp_path / "victim", tmp_path / "base.pt"
    victim.write_text("KEEP\n")
    out = atomic.PendingOutput(target)
    tmp = out.release()
    Path(tmp).write_bytes(b"tensors")  # what the target interpreter writes
    target.symlink_to(victim)  # swapped in while the run went on
    with pytest.raises(RefusedPath, match="symbolic link"):
        out.commit()
    assert victim.read_text() == "KEEP\n" and os.path.islink(target) and not os.path.exists(tmp)


def test_a_pending_output_commits_with_its_mode(tmp_path):
    out = atomic.PendingOutput(tmp_path / "base.pt", mode=0o644)
    Path(out.release()).write_bytes(b"tensors")
    out.commit()
    assert (tmp_path / "base.pt").read_bytes() == b"tensors"
    assert stat.S_IMODE(os.stat(tmp_path / "base.pt").st_mode) == 0o644


# -- nothing else writes -------------------------------------------------------------------------
# file -> why it may open files for writing or rename them itself (none is a path a user names)
OTHER_WRITERS = {
    "neuron_env/guards/atomic.py": "the one writer",
    "neuron_env/install/lock.py": "install.lock and logs inside the environment: O_EXCL|"
                                  "O_NOFOLLOW, checked on the descriptor",
    "neuron_env/install/steps.py": "the install log, made by install/lock.open_new",
    "neuron_env/install/venv.py": "the venv's incomplete marker, O_NOFOLLOW",
    "neuron_env/install/apply.py": "lock.txt in neuron-env's own mkdtemp directory",
    "neuron_env/matrix/update.py": "the signature check's files in its own mkdtemp directory",
    "neuron_env/commands/scan.py": "scan --fix rewrites the scanned file itself, keeping owner "
                                   "and mode (docs/security.md)",
    "neuron_env/trial/rundir.py": "the owner record in the run directory it just made "
                                  "(mkdtemp, 0700): O_CREAT|O_EXCL|O_NOFOLLOW",
    # the code neuron-env runs in OTHER processes (#45): the inside scripts (the target
    # interpreter: stdlib + torch, no neuron_env) and the emulator each have ONE writer
    "neuron_env/inside/_shared.py": "the inside scripts' one opener/writer: the run directory "
                                    "judged first, O_CREAT|O_EXCL|O_NOFOLLOW then rename; "
                                    "PendingOutput's file reopened O_NOFOLLOW, no create",
    "backend/src/neuron_emulator/_files.py": "the emulator's one writer: the debug directory "
                                             "0700 or trusted, O_EXCL|O_NOFOLLOW then rename",
}
# beyond neuron_env/: the other code neuron-env ships that writes files in other processes
OTHER_TREES = ("backend/src",)


def _saves_by_name(node: ast.Call, name: str) -> bool:
    """torch.save(obj, PATH) opens PATH itself (O_CREAT, links followed): only a file object
    (a buffer, or one the one writer opened) may be its target. A name that is a string, a
    path join or an f-string is a write by name."""
    if name != "save" or len(node.args) < 2:
        return False
    target = node.args[1]
    return isinstance(target, ast.Constant | ast.JoinedStr | ast.BinOp) or (
        isinstance(target, ast.Call) and "path" in ast.unparse(target.func).lower())


def _is_write(node: ast.Call, other_process: bool = False) -> bool:
    """other_process: code neuron-env runs in another process (inside/, backend/src), where
    making a directory counts too (the emulator's debug directory, #45)."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if any(k.arg == "fileobj" for k in node.keywords):  # tarfile.open into memory
        return False
    modes = [*node.args[1:2], *[k.value for k in node.keywords if k.arg == "mode"]]
    return ((name in ("replace", "rename") and isinstance(f, ast.Attribute)
             and isinstance(f.value, ast.Name) and f.value.id == "os")
            or name in ("write_text", "write_bytes")
            or (other_process and name in ("mkdir", "makedirs"))
            or _saves_by_name(node, name)
            or (name in ("open", "fdopen") and any(
                isinstance(a, ast.Constant) and isinstance(a.value, str)
                and bool(set(a.value) & set("wax+")) for a in modes))
            or (name == "open" and any(w in ast.unparse(node)
                                       for w in ("O_WRONLY", "O_RDWR", "O_CREAT"))))


def _writes(tree: ast.AST, rel: str = "") -> list[int]:
    other = rel.startswith(("neuron_env/inside/", *OTHER_TREES))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_write(n, other)]


def _sources() -> list[Path]:
    return sorted([*(REPO / "neuron_env").rglob("*.py"),
                   *(p for tree in OTHER_TREES for p in (REPO / tree).rglob("*.py"))])


def test_nothing_but_the_listed_modules_writes_files():
    """neuron_env/ (the inside scripts included) and backend/src (the emulator): nothing but
    the listed writers opens a file for writing, makes a directory, renames, or hands
    torch.save a path."""
    found = {}
    for path in _sources():
        rel = path.relative_to(REPO).as_posix()
        lines = _writes(ast.parse(path.read_text(encoding="utf-8")), rel)
        if lines and rel not in OTHER_WRITERS:
            found[rel] = lines
    assert not found, f"files written outside guards/atomic.py (use write_output): {found}"
    stale = [f for f in OTHER_WRITERS if not _writes(ast.parse((REPO / f).read_text()), f)]
    assert not stale, f"listed writers that no longer write: {stale}"


def test_an_unwritable_directory_is_a_clear_exit_2_not_a_traceback(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "f").write_text("")
    for target in (ro / "f" / "x.json",):  # its "directory" is a file: no root bypasses that
        with pytest.raises(RefusedPath, match="cannot be written") as e:
            atomic.write_output(target, "{}")
        assert e.value.exit_code == EXIT_CONFIG
        with pytest.raises(RefusedPath, match="cannot be written"):
            atomic.PendingOutput(target)
