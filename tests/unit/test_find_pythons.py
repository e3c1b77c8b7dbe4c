"""probes/pythons.py: the interpreters a fix line may name, found by listing directories."""

from __future__ import annotations

import os

from neuron_env.probes.pythons import find_pythons


def _exe(path, executable: bool = True):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    path.chmod(0o755 if executable else 0o644)
    return str(path)


def test_path_then_pyenv_then_uv_first_of_each_version(tmp_path):
    home, a, b = tmp_path / "home", tmp_path / "a", tmp_path / "b"
    first = _exe(a / "python3.12")
    _exe(b / "python3.12")  # shadowed by PATH's first directory
    _exe(b / "python3.13", executable=False)
    _exe(b / "python3")  # no minor in the name: not named by fix lines
    _exe(b / "python3.12-config")
    pyenv = _exe(home / ".pyenv/versions/3.11.9/bin/python3.11")
    uv = _exe(tmp_path / "uvpy/cpython-3.10/bin/python3.10")
    env = {"PATH": os.pathsep.join([str(a) + "/", "", str(b)]), "HOME": str(home),
           "UV_PYTHON_INSTALL_DIR": str(tmp_path / "uvpy")}
    found = dict((v, p) for p, v in find_pythons(env))
    assert {k: found[k] for k in ("3.12", "3.11", "3.10")} == {
        "3.12": first, "3.11": pyenv, "3.10": uv}
    assert not found.get("3.13", "").startswith(str(tmp_path))  # not executable


def test_venvs_and_shims_are_no_base(tmp_path):
    venv, shims = tmp_path / "venv", tmp_path / "pyenv/shims"
    (venv / "pyvenv.cfg").parent.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    _exe(venv / "bin/python3.9")
    _exe(shims / "python3.8")
    env = {"PATH": os.pathsep.join([str(venv / "bin"), str(shims)]),
           "HOME": str(tmp_path / "nohome")}
    assert not [p for p, _ in find_pythons(env) if p.startswith(str(tmp_path))]


def test_one_directory_under_two_names_is_listed_once(tmp_path, monkeypatch):
    real = tmp_path / "usr/bin"
    first = _exe(real / "python3.12")
    (tmp_path / "bin").symlink_to(real)  # merged /usr: /bin is /usr/bin
    listed = []
    monkeypatch.setattr(os, "listdir", lambda d, _real=os.listdir: listed.append(d) or _real(d))
    env = {"PATH": os.pathsep.join([str(real), str(tmp_path / "bin"), str(real)]),
           "HOME": str(tmp_path / "nohome")}
    assert dict((v, p) for p, v in find_pythons(env))["3.12"] == first
    assert [d for d in listed if d.startswith(str(tmp_path))] == [str(real)]
