"""cli/lazy.py: the click tree `main()` runs imports and builds only the subcommand it runs,
and is the same tree typer would build (names, options, help, typo hints); COMMANDS in
cli/command_table.py names every command of every module."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from typer.main import get_command

import neuron_env.cli
from neuron_env.cli import COMMANDS, lazy, register

app = register()


def _params(cmd) -> list[tuple]:
    return [(p.name, tuple(p.opts), tuple(p.secondary_opts), p.required, repr(p.default),
             p.help if hasattr(p, "help") else None) for p in cmd.params]


def test_version_builds_no_subcommand(capsys):
    group = lazy.command(app, COMMANDS)
    assert group(["--version"], standalone_mode=False) == 0
    assert capsys.readouterr().out.startswith("neuron-env ")
    assert group.commands.built() == []


def test_a_run_builds_only_its_command(capsys):
    group = lazy.command(app, COMMANDS)
    rc = group(["instance", "trn2.48xlarge", "--format", "json"], standalone_mode=False)
    assert rc == 0 and '"trn2.48xlarge"' in capsys.readouterr().out
    assert group.commands.built() == ["instance"]


def test_same_tree_as_typer_builds():
    eager, group = get_command(app), lazy.command(app, COMMANDS)
    assert sorted(group.commands) == sorted(eager.commands)
    assert list(group.commands) == [name for name, _ in COMMANDS]
    assert _params(group) == _params(eager)  # --version and the completion flags
    for name, cmd in eager.commands.items():
        mine = group.commands[name]
        assert type(mine) is type(cmd) and mine.help == cmd.help, name
        assert _params(mine) == _params(cmd), name
        assert sorted(getattr(mine, "commands", {})) == sorted(getattr(cmd, "commands", {}))


def test_help_lists_every_command(capsys):
    group = lazy.command(app, COMMANDS)
    assert group(["--help"], standalone_mode=False) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in get_command(app).commands)


def test_typo_hint_without_building(capsys):
    group = lazy.command(app, COMMANDS)
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


def test_commands_names_every_module_and_the_module_that_registers_each():
    here = Path(neuron_env.cli.__file__).parent
    modules = {p.stem for p in here.glob("*.py")} - {"__init__", "app", "command_table", "lazy",
                                                           "requires"}
    assert {m for _, m in COMMANDS} == modules, "a command module is missing from COMMANDS"
    lazy_annotations = [m for m in modules if "from __future__ import annotations"
                        in (here / f"{m}.py").read_text()]
    assert lazy_annotations == [], "typer evals string annotations: ~2 ms a command"
    eager = get_command(app)
    for name, module in COMMANDS:
        cmd = eager.commands[name]
        subs = getattr(cmd, "commands", {}).values() or [cmd]
        assert all(c.callback.__module__ == f"neuron_env.cli.{module}"
                   or getattr(c.callback, "__wrapped__", c.callback).__module__
                   == f"neuron_env.cli.{module}" for c in subs), (name, module)


def test_a_wrong_table_says_where_to_fix_it():
    group = lazy.command(app, [("nosuch", "doctor")])
    with pytest.raises(RuntimeError, match="COMMANDS"):
        group.commands["nosuch"]


def test_package_app_has_every_command():
    assert importlib.import_module("neuron_env.cli").app is app
    assert len(app.registered_commands) + len(app.registered_groups) == len(COMMANDS)


def test_importing_the_cli_leaves_the_collector_on_and_freezes_the_start_up_objects():
    import gc

    gc.unfreeze()
    importlib.reload(neuron_env.cli)
    assert gc.isenabled() and gc.get_freeze_count() > 0
    gc.disable()
    try:
        importlib.reload(neuron_env.cli)
        assert not gc.isenabled()  # as it found it
    finally:
        gc.enable()


def test_help_lists_the_commands_in_workflow_order_in_panels(capsys):
    """doctor, install, smoke, trial, scan, collectives, fleet, then the bootstrap and engine
    renderers; each under its panel title; every command in exactly one panel."""
    from neuron_env.cli import PANELS

    group = lazy.command(app, COMMANDS, PANELS)
    assert group(["--help"], standalone_mode=False) == 0
    out = capsys.readouterr().out
    workflow = ["doctor", "install", "smoke", "trial", "scan", "collectives", "fleet",
                "userdata", "imagebuilder-component", "slurm-healthcheck", "k8s-manifests",
                "bundle", "instance", "matrix"]
    at = [out.index(f"\n  {name} ") for name in workflow]
    assert at == sorted(at), out
    titles = [out.index(f"\n{title}:\n") for title, _ in PANELS]
    assert titles == sorted(titles) and "Other commands" not in out
    assert sorted(n for _, names in PANELS for n in names) == sorted(n for n, _ in COMMANDS)
    assert out.index("\nCheck, install, run:\n") < at[0] < at[3] < out.index("\nPort and")
    assert group.commands.built() == list(group.commands)  # help lists (builds) them all
