"""cli/lazy.py: the click tree `main()` runs builds only the subcommand it runs, and is the
same tree typer would build (names, order, options, help, typo hints)."""

from __future__ import annotations

import pytest
from typer.main import get_command

import neuron_env.cli  # noqa: F401  (registers every command)
from neuron_env.cli import lazy
from neuron_env.cli.app import app


def _params(cmd) -> list[tuple]:
    return [(p.name, tuple(p.opts), tuple(p.secondary_opts), p.required, repr(p.default),
             p.help if hasattr(p, "help") else None) for p in cmd.params]


def test_version_builds_no_subcommand(capsys):
    group = lazy.command(app)
    assert group(["--version"], standalone_mode=False) == 0
    assert capsys.readouterr().out.startswith("neuron-env ")
    assert group.commands.built() == []


def test_a_run_builds_only_its_command(capsys):
    group = lazy.command(app)
    rc = group(["instance", "trn2.48xlarge", "--format", "json"], standalone_mode=False)
    assert rc == 0 and '"trn2.48xlarge"' in capsys.readouterr().out
    assert group.commands.built() == ["instance"]


def test_same_tree_as_typer_builds():
    eager, group = get_command(app), lazy.command(app)
    assert list(group.commands) == list(eager.commands)
    assert _params(group) == _params(eager)  # --version and the completion flags
    for name, cmd in eager.commands.items():
        mine = group.commands[name]
        assert type(mine) is type(cmd) and mine.help == cmd.help, name
        assert _params(mine) == _params(cmd), name
        assert sorted(getattr(mine, "commands", {})) == sorted(getattr(cmd, "commands", {}))


def test_help_lists_every_command(capsys):
    group = lazy.command(app)
    assert group(["--help"], standalone_mode=False) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in get_command(app).commands)


def test_typo_hint_without_building(capsys):
    group = lazy.command(app)
    with pytest.raises(Exception, match="Did you mean 'doctor'"):
        group(["doctr"], standalone_mode=False)
    assert group.commands.built() == []


def test_mapping_behaves_like_a_dict():
    made = []
    m = lazy.LazyCommands({"a": lambda: made.append("a") or "A", "b": lambda: "B"})
    assert list(m) == ["a", "b"] and len(m) == 2 and "a" in m and "c" not in m
    assert m.get("c") is None and made == []
    assert m["a"] == "A" and m["a"] == "A" and made == ["a"]  # built once
    m["c"] = "C"
    del m["b"]
    assert dict(m.items()) == {"a": "A", "c": "C"}
