"""typer's click tree, built one subcommand at a time, its module imported when needed.

`typer.main.get_command(app)` turns every registered command into a click command up front:
the signature of each function inspected, each option converted (~35 ms for neuron-env's ~20
commands and groups, more than the rest of doctor's own start-up); and registering them means
importing every command module (~10 ms more). `command(app, commands)` builds the same root
group (its options, --version, completion) but fills its subcommands on first look-up, from
the (name, module) table in cli/command_table.py: a run imports and builds only the command it runs.
Help, completion and typo hints still see every name (help and completion build the rest when
they list them).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from functools import partial
from typing import Any

import typer
from typer import main as typer_main
from typer.core import TyperGroup


class LazyCommands(MutableMapping):
    """name -> click command, in registration order; each built by its factory when asked."""

    def __init__(self, factories: dict[str, Callable[[], object]]) -> None:
        self._factories = dict(factories)
        self._built: dict[str, object] = {}

    def __getitem__(self, name: str):
        if name not in self._built:
            self._built[name] = self._factories[name]()  # KeyError for an unknown name
        return self._built[name]

    def __setitem__(self, name: str, command) -> None:
        self._factories.setdefault(name, lambda: command)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._factories[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def built(self) -> list[str]:
        """The names built so far (a test's view)."""
        return list(self._built)


def factories(app: typer.Typer) -> dict[str, Callable[[], object]] | None:
    """One factory per registered command and group, keyed as typer would name them; None
    where a name cannot be known without building (an unnamed group: typer merges it)."""
    opts: dict[str, Any] = {"pretty_exceptions_short": app.pretty_exceptions_short,
            "rich_markup_mode": app.rich_markup_mode}
    out: dict[str, Callable[[], object]] = {}
    for info in app.registered_commands:
        name = info.name or typer_main.get_command_name(getattr(info.callback, "__name__", ""))
        out[name] = partial(typer_main.get_command_from_info, info, **opts)
    for group in app.registered_groups:
        if not isinstance(group.name, str) or not group.name:
            return None
        out[group.name] = partial(typer_main.get_group_from_info, group,
                                 suggest_commands=app.suggest_commands, **opts)
    return out


def _lazy(app: typer.Typer, name: str, module: str):
    """The factory of `name`: import its module (which registers it on `app`), build it."""
    def build():
        importlib.import_module(f"neuron_env.cli.{module}")
        made = factories(app) or {}
        if name not in made:
            raise RuntimeError(f"neuron_env.cli.{module} registers no command {name!r} "
                               "(fix COMMANDS in neuron_env/cli/command_table.py)")
        return plain_usage(made[name]())
    return build


def plain_usage(cmd):
    """A required argument shows as its metavar (`MODEL`), not typer's `{MODEL}` (which reads
    as a set to choose from); recursively, for a group's commands."""
    for p in getattr(cmd, "params", ()):
        if p.param_type_name == "argument" and p.required:
            word = p.metavar or (p.name or "ARG").upper() + ("..." if p.nargs != 1 else "")
            p.make_metavar = partial(_metavar, word)
    for sub in getattr(cmd, "commands", {}).values():
        plain_usage(sub)
    return cmd


def _metavar(metavar: str, ctx=None, *, usage: bool = False) -> str:
    return metavar


def command(app: typer.Typer, commands: Sequence[tuple[str, str]] | None = None,
            panels: Sequence[tuple[str, Sequence[str]]] = ()):
    """The click command `app()` would run, its subcommands built on demand. `commands`:
    (name, module) pairs whose modules are imported on demand too; else those registered.
    `panels`: (title, names) sections that `--help` lists the commands in."""
    made = ({name: _lazy(app, name, module) for name, module in commands} if commands
            else factories(app))
    if made is None or not app.registered_callback:
        return typer_main.get_command(app)
    root = copy.copy(app)  # the root alone: its callback, options and completion flags
    root.registered_commands, root.registered_groups = [], []
    group = typer_main.get_command(root)
    if not isinstance(group, TyperGroup):  # never: a root with a callback is a group
        return group
    group.commands = LazyCommands(made)
    if panels:
        # this group's own format_commands (in its __dict__: the class's method stays)
        vars(group)["format_commands"] = partial(_format_panels, group, panels)
    return group


def _format_panels(group, panels: Sequence[tuple[str, Sequence[str]]], ctx, formatter) -> None:
    """click's Group.format_commands, one section per panel (what typer's rich_help_panel
    shows in its rich mode; neuron-env's help is plain click)."""
    names = [n for n in group.list_commands(ctx) if not group.commands[n].hidden]
    if not names:
        return
    width = max(len(n) for n in names)  # one column for every panel
    limit = formatter.width - 6 - width
    placed = {n for _, members in panels for n in members}
    sections = [*panels, ("Other commands", [n for n in names if n not in placed])]
    for title, members in sections:
        rows = [(n.ljust(width), group.commands[n].get_short_help_str(limit))
                for n in members if n in names]
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)
