"""`neuron-env scan` on trees someone else controls (#25 items 17-21): hostile ignore files
(a FIFO, /dev/zero, an oversized file, catastrophic and invalid patterns), a 700-level tree, a
symlink loop, --fix through a symlink and on another user's file, fixes inside f-strings that
must parse on Python 3.10, and SARIF for a file name that is not UTF-8."""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.helpers.cli import cli_env

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "fixtures" / "scan"
SARIF = json.loads((REPO / "tests" / "fixtures" / "sarif-schema-2.1.0.json").read_text())
XLA = "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"


def scan(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI with a hard wall: a hang or a minutes-long match fails the test, not CI."""
    return subprocess.run([sys.executable, "-m", "neuron_env", "scan", *args],
                          capture_output=True, env=cli_env(), cwd=cwd, timeout=timeout)


def _json(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode in (0, 1), p.stderr.decode(errors="replace")
    return json.loads(p.stdout)


def _skipped(doc: dict) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in doc["files"]["skipped"]}


# -- 17: ignore files -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "symlink_fifo", "huge"])
def test_hostile_ignore_file_is_never_read(tmp_path, kind):
    (tmp_path / "a.py").write_text(XLA)
    gi = tmp_path / ".gitignore"
    if kind == "dev_zero":
        gi.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(gi)
    elif kind == "symlink_fifo":
        os.mkfifo(tmp_path / "pipe")
        gi.symlink_to(tmp_path / "pipe")
    else:
        gi.write_bytes(b"#" * (4 * 1024 * 1024 + 10))
    doc = _json(scan(".", "--format", "json", cwd=tmp_path, timeout=30))
    assert doc["files"]["scanned"] == ["a.py"]
    reason = _skipped(doc)[".gitignore"]
    assert "not read" in reason, reason


def test_catastrophic_pattern_finishes_fast(tmp_path):
    """`**a**a...**b` sent re into minutes of backtracking; the NFA matcher is linear. The
    subprocess timeout is generous (a wall, not a micro-benchmark)."""
    (tmp_path / ".gitignore").write_text("**a**a**a**a**a**a**a**a**a**a**a**b\n"
                                         "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n")
    d = tmp_path / ("a" * 200)
    d.mkdir()
    for i in range(20):
        (d / (("a" * 200) + f"{i}.py")).write_text(XLA)
    doc = _json(scan(".", "--format", "json", cwd=tmp_path, timeout=60))
    assert len(doc["files"]["scanned"]) == 20


def test_bad_patterns_are_warnings_naming_file_and_line(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("ok.py\n[z-a]\n[[:nope:]]x\n*.gen.py\n")
    for n in ("a.py", "sub/ok.py", "sub/x.gen.py", "sub/b.py"):
        (tmp_path / n).write_text(XLA)
    p = scan(".", "--format", "json", cwd=tmp_path)
    doc = _json(p)
    assert sorted(doc["files"]["scanned"]) == ["a.py", "sub/b.py"]  # the good lines still hold
    sk = _skipped(doc)
    assert "range z-a is reversed" in sk["sub/.gitignore:2"]
    assert "[:nope:]" in sk["sub/.gitignore:3"]
    text = scan(".", cwd=tmp_path).stdout.decode()
    assert "sub/.gitignore:2" in text and "Traceback" not in text


# -- 18: deep trees and loops -----------------------------------------------------------------
def test_700_level_tree_and_a_symlink_loop(tmp_path):
    d = tmp_path
    for _ in range(700):
        d = d / "d"
        d.mkdir()
        (d / "__init__.py").write_text("")
    (d / "deep.py").write_text(XLA)
    (tmp_path / "loop.py").symlink_to("loop.py")  # ELOOP on every stat
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    doc = _json(scan(".", "--format", "json", cwd=tmp_path, timeout=120))
    deep = [f for f in doc["files"]["scanned"] if f.endswith("deep.py")]
    assert len(deep) == 1 and deep[0].count("/") == 700
    sk = _skipped(doc)
    assert "cannot be stat'ed" in sk["loop.py"] and "symbolic links" in sk["loop.py"]


# -- 19: --fix through a symlink, keeping owner/group/mode ------------------------------------
def test_fix_rewrites_the_symlink_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "z_real"
    real.mkdir()
    (real / "t.py").write_text(XLA)
    os.chmod(real / "t.py", 0o640)
    (tmp_path / "a_link.py").symlink_to("z_real/t.py")  # walked first: the link is the task
    (tmp_path / "other.py").write_text(XLA)
    (tmp_path / "b_link.py").symlink_to("other.py")
    p = scan(".", "--fix", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    p = scan("b_link.py", "--fix", cwd=tmp_path)  # a link named on the command line
    for link, target in (("a_link.py", real / "t.py"), ("b_link.py", tmp_path / "other.py")):
        assert (tmp_path / link).is_symlink(), link  # the link is still a link
        assert 'torch.device("neuron")' in target.read_text()  # the target got the fix
    assert oct((real / "t.py").stat().st_mode & 0o777) == oct(0o640)
    assert not list(tmp_path.rglob(".neuron-env-fix.*"))


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_fix_as_root_keeps_another_users_owner_group_and_mode(tmp_path):
    f = tmp_path / "theirs.py"
    f.write_text(XLA)
    os.chown(f, 4242, 4343)
    os.chmod(f, 0o664)
    os.chown(tmp_path, 4242, 4343)
    link = tmp_path / "link.py"
    link.symlink_to(f)
    p = scan(str(f), str(link), "--fix", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    st = f.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (4242, 4343, 0o664)
    assert 'torch.device("neuron")' in f.read_text() and link.is_symlink()


def test_fix_refuses_a_hard_linked_file(tmp_path):
    (tmp_path / "a.py").write_text(XLA)
    os.link(tmp_path / "a.py", tmp_path / "b.txt")
    doc = _json(scan("a.py", "--fix", "--format", "json", cwd=tmp_path))
    assert doc["fixes"]["applied"] == 0 and "hard links" in doc["fixes"]["refused"][0]["reason"]
    assert (tmp_path / "b.txt").read_text() == XLA


# -- 20: fixes parse on the oldest supported Python -------------------------------------------
def _python_310() -> str | None:
    for p in (shutil.which("python3.10"), *glob.glob("/root/.pyenv/versions/3.10*/bin/python"),
              *glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python"))):
        if p and os.access(p, os.X_OK):
            try:
                v = subprocess.run([p, "-c", "import sys; print(sys.version_info[:2])"],
                                   capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            if v.strip() == "(3, 10)":
                return p
    return None


def test_every_fixed_corpus_file_parses_on_python_310(tmp_path):
    work = tmp_path / "corpus"
    shutil.copytree(CORPUS, work)
    p = scan(".", "--fix", "--format", "json", cwd=work)
    doc = _json(p)
    assert "device_in_fstrings.py" in " ".join(doc["fixes"]["files"])
    fixed = [work / f for f in doc["fixes"]["files"] if f.endswith(".py")]
    assert len(fixed) >= 2
    for f in fixed:
        src = f.read_text()
        ast.parse(src, feature_version=(3, 10))
        compile(src, str(f), "exec")  # this interpreter: 3.11's grammar rejects PEP 701
    fs = (work / "fstrings" / "device_in_fstrings.py").read_text()
    assert "f\"running on {torch.device('neuron')}\"" in fs
    assert "f'running on {torch.device(\"neuron\")}'" in fs
    assert "nested = f\"{f'{xm.xla_device()}'}\"" in fs  # both quotes taken: left alone
    py310 = _python_310()
    if py310 is None:
        pytest.skip("no Python 3.10 interpreter here (pyenv install 3.10) to compile with")
    for f in fixed:
        c = subprocess.run([py310, "-c", "import sys; compile(open(sys.argv[1]).read(), "
                            "sys.argv[1], 'exec')", str(f)], capture_output=True, text=True,
                           timeout=60)
        assert c.returncode == 0, c.stderr


# -- 21: SARIF for a file name that is not UTF-8 ----------------------------------------------
def test_sarif_with_a_non_utf8_file_name(tmp_path):
    name = b"bad\xff\xfe name.py"
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as f:
        f.write(XLA.encode())
    (tmp_path / "ok.py").write_text(XLA)
    p = scan(".", "--format", "sarif", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    sarif = json.loads(p.stdout)
    jsonschema.validators.validator_for(SARIF)(SARIF).validate(sarif)
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
            for r in sarif["runs"][0]["results"] for loc in r["locations"]}
    assert "bad%FF%FE%20name.py" in uris and "ok.py" in uris
    for fmt in ("json", "text"):
        q = scan(".", "--format", fmt, cwd=tmp_path)
        assert q.returncode == 1 and q.stdout, q.stderr
        q.stdout.decode("utf-8")  # valid UTF-8 whatever the name


def test_text_view_escapes_every_control_character_in_file_names(tmp_path):
    """A file name with a newline forged whole finding lines in the text view (U+2028 was
    already escaped, LF and ESC were not): every control character is shown as an escape, in
    the findings, the skipped files and the fixed files."""
    forged = "  ok.py:1:1: error   forged.rule  all clear"
    (tmp_path / f"a\n{forged}\n.py").write_text(XLA)
    (tmp_path / "b\x1b[2J\x1b]0;pwned\x07.py").write_text(XLA)
    (tmp_path / "c\r\u2028.sh").write_bytes(b"\xff\xfe\x00 not text")
    for args in (["."], ["--fix", "."]):
        p = scan(*args, cwd=tmp_path)
        out = p.stdout.decode("utf-8", "surrogateescape")
        assert p.returncode in (0, 1), p.stderr
        assert not any(ln.startswith("  ok.py") for ln in out.splitlines()), out
        assert "\x1b" not in out and "\x07" not in out and "\r" not in out
        assert "a\\x0a" in out and "b\\x1b[2J\\x1b]0;pwned\\x07.py" in out
        assert out.count("\n") == len(out.splitlines())
