"""Trust by owner for the user's matrix directory (issue #36, finding 23): a directory or a file
another user owns, or that group/others may write, never chooses the matrix; it is ignored with
a warning naming it and why. Tests run as root here: a file is given to another uid with chown
(skipped when not root); the mode rule holds for everyone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.cli import REPO, cli_env, run_cli
from tests.helpers.indexes import PY312, needs312, pip_env
from tests.integration.test_install import host_root

pytestmark = pytest.mark.integration
__all__ = ["host_root"]  # test_install's fixture, used here too

BASE = (REPO / "matrices" / "neuron-2.33.toml").read_text()
OTHER_UID = 54321


def hostile(release: str = "2.99") -> str:
    """A valid matrix of a release newer than any bundled one, whose Neuron index is http."""
    out = BASE.replace('release = "2.33"', f'release = "{release}"', 1)
    return out.replace('url = "https://pip.repos.neuron.amazonaws.com"',
                       'url = "http://evil.example/simple"', 1)


def listed(user: Path) -> tuple[list[dict], str]:
    res = run_cli("matrix", "list", "--format", "json",
                  env=cli_env(NEURON_ENV_MATRIX_DIR=str(user)))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    return json.loads(res.stdout)["matrices"], res.stderr


def doctor_release(user: Path) -> tuple[dict, str]:
    res = run_cli("doctor", "--only", "os", "--format", "json",
                  env=cli_env(NEURON_ENV_MATRIX_DIR=str(user)))
    assert "Traceback" not in res.stderr, res.stderr
    return json.loads(res.stdout)["matrix"], res.stderr


def test_group_or_world_writable_file_or_dir_is_ignored(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir(mode=0o755)
    f = user / "neuron-2.99.toml"
    f.write_text(hostile())
    f.chmod(0o644)
    rows, err = listed(user)
    assert rows[0]["release"] == "2.99" and rows[0]["origin"] == "user" and not err
    f.chmod(0o666)
    rows, err = listed(user)
    assert "2.99" not in [r["release"] for r in rows]
    assert f"ignoring the matrix file {f}: writable by group or others (mode 666)" in err
    m, err = doctor_release(user)
    assert m["release"] != "2.99" and m["origin"] == "bundled" and str(f) in err
    f.chmod(0o644)
    user.chmod(0o777)
    rows, err = listed(user)
    assert "2.99" not in [r["release"] for r in rows]
    assert f"ignoring the user matrix directory {user}: writable by group or others" in err


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_root_with_an_inherited_home_ignores_another_users_files(tmp_path: Path) -> None:
    """The finding: root, HOME of another user, a newer release file owned by that user."""
    home = tmp_path / "alice"
    user = home / ".local" / "share" / "neuron-env" / "matrices"
    user.mkdir(parents=True)
    f = user / "neuron-2.99.toml"
    f.write_text(hostile())
    os.chown(f, OTHER_UID, OTHER_UID)
    env = cli_env(HOME=str(home), XDG_DATA_HOME=None, NEURON_ENV_MATRIX_DIR=None)
    res = run_cli("matrix", "list", "--format", "json", env=env)
    rows = json.loads(res.stdout)["matrices"]
    assert "2.99" not in [r["release"] for r in rows]
    assert f"ignoring the matrix file {f}: owned by uid {OTHER_UID}, not by this user" \
        in res.stderr
    for d in [user, *user.parents][:4]:  # the directory itself given away: all of it ignored
        os.chown(d, OTHER_UID, OTHER_UID)
    os.chown(f, 0, 0)
    res = run_cli("doctor", "--only", "os", "--format", "json", env=env)
    assert json.loads(res.stdout)["matrix"]["release"] != "2.99"
    assert f"ignoring the user matrix directory {user}: owned by uid {OTHER_UID}" in res.stderr


@needs312
def test_install_refuses_a_plain_http_index_from_a_user_matrix(
        idx: dict, host_root: Path, tmp_path: Path) -> None:
    """A trusted user-directory matrix still may not send install to a plain-http index on its
    own: only an index the user passes (flag or variable) is used; the plan says the origin."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "neuron-2.99.toml").write_text(hostile())
    env = pip_env(idx, NEURON_ENV_MATRIX_DIR=str(user), NEURON_ENV_NEURON_INDEX_URL=None)
    args = ("install", "--root", str(host_root), "--python", PY312, "--dry-run")
    res = run_cli(*args, env=env, timeout=240)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"the matrix {user / 'neuron-2.99.toml'} (not bundled) names a plain-http index" \
        in res.stderr and "--neuron-index-url" in res.stderr
    res = run_cli(*args, "--neuron-index-url", idx["neuron"], "--format", "json", env=env,
                  timeout=240)
    doc = json.loads(res.stdout)
    assert res.returncode == 0, res.stderr
    assert doc["matrix"]["origin"] == "user" and doc["matrix"]["release"] == "2.99"
    assert doc["matrix"]["path"] == str(user / "neuron-2.99.toml")
    text = run_cli(*args, "--neuron-index-url", idx["neuron"], env=env, timeout=240).stdout
    assert "matrix: Neuron 2.99 (user, " in text and str(user / "neuron-2.99.toml") in text


def test_update_refuses_an_untrusted_user_directory(tmp_path: Path) -> None:
    """`matrix update` into a directory every command would ignore is refused, not a silent
    no-op (the pinned file is never even fetched: the URL points nowhere)."""
    user = tmp_path / "user"
    user.mkdir()
    user.chmod(0o777)
    res = run_cli("matrix", "update", "--from", f"https://127.0.0.1:9/m.toml#sha256={'0' * 64}",
                  env=cli_env(NEURON_ENV_MATRIX_DIR=str(user)))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"the user matrix directory {user} is writable by group or others" in res.stderr
    assert list(user.iterdir()) == []
