"""guards/trust.py: the one owner/mode rule, and every caller routed through it (the user matrix
directory and its files, the matrix parse cache, the compile cache probe)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from neuron_env.guards.trust import why_untrusted, why_untrusted_path

REPO = Path(__file__).resolve().parents[2]


def test_owner_and_mode(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    f.chmod(0o644)
    me = os.geteuid()
    assert why_untrusted(os.lstat(f)) is None
    other = 54321 if me != 54321 else 54322
    st = os.lstat(f)
    if st.st_uid == 0:  # root's file: trusted by everyone
        assert why_untrusted(st, uid=other) is None
    else:
        assert "not by this user" in (why_untrusted(st, uid=other) or "")
    for mode in (0o664, 0o646, 0o666):
        f.chmod(mode)
        assert "writable by group or others" in (why_untrusted_path(f) or ""), oct(mode)
    f.chmod(0o600)
    assert why_untrusted_path(f, kind="file") is None
    assert why_untrusted_path(f, kind="dir") == "not a directory"
    link = tmp_path / "link"
    link.symlink_to(f)
    assert "symbolic link" in (why_untrusted_path(link) or "")
    assert why_untrusted_path(tmp_path / "absent") is None


def test_a_sticky_root_directory_is_trusted_a_sticky_users_is_not(tmp_path: Path) -> None:
    st = os.lstat("/tmp")
    if st.st_uid == 0 and st.st_mode & 0o1000:
        assert why_untrusted(st) is None
    d = tmp_path / "d"
    d.mkdir()
    d.chmod(0o1777)
    if os.lstat(d).st_uid != 0:
        assert "writable" in (why_untrusted_path(d) or "")


def _callers() -> set[str]:
    out = set()
    for p in (REPO / "neuron_env").rglob("*.py"):
        tree = ast.parse(p.read_text())
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module == "neuron_env.guards.trust":
                out.add(str(p.relative_to(REPO)))
    return out


def test_every_owner_check_goes_through_util_trust() -> None:
    """The callers the rule must serve import it; no module compares st_uid to geteuid()
    on its own (bundle/collect.py checks a venv's owner, another rule, and is named here)."""
    assert {"neuron_env/matrix/catalog.py", "neuron_env/matrix/cache.py",
            "neuron_env/probes/cache.py", "neuron_env/trial/rundir.py"} <= _callers()
    own_rules = set()
    for p in (REPO / "neuron_env").rglob("*.py"):
        text = p.read_text()
        if "st_uid" in text and "geteuid" in text and p.name != "trust.py":
            own_rules.add(str(p.relative_to(REPO)))
    # inside/_shared.py: guards/trust's rule in stdlib lines for the scripts that run in the
    # target interpreter, which cannot import neuron_env (#45)
    assert own_rules <= {"neuron_env/commands/scan.py", "neuron_env/inside/_shared.py"}, \
        own_rules
