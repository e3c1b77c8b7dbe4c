"""The command line: `app.py` holds the typer app and the one boundary; each other module here
parses one command's flags and hands a producer to `app.emit`.

COMMANDS (cli/command_table.py, re-exported here) names every command and group with the module
that registers it, in the order help lists them. A run imports only the module of the command
it runs (`main()`, cli/lazy.py: the other modules' typer options cost ~10 ms of start-up).
`register()`, and `app` read from this package, import every module: the app with every
command. A new command module gets a line in COMMANDS (tests/unit/test_cli_lazy.py fails
until it has one), and no `from __future__ import annotations`: typer would compile and eval
every annotation string (~2 ms a command)."""

import gc

# Importing typer and the app allocates tens of thousands of objects that live as long as the
# process; collecting while they pile up walks them again and again (~10 ms of a doctor run).
# So no collection while they are imported, then gc.freeze(): later collections skip them.
_collecting = gc.isenabled()
gc.disable()
try:
    from neuron_env.cli.app import main
finally:
    gc.freeze()
    if _collecting:
        gc.enable()

from neuron_env.cli.command_table import COMMANDS, PANELS  # noqa: E402  (after gc.freeze)


def register():
    """Import every command module (each registers its commands on the app); the app."""
    import importlib

    for _, module in COMMANDS:
        importlib.import_module(f"{__name__}.{module}")
    from neuron_env.cli.app import app

    panel = {name: title for title, names in PANELS for name in names}
    for info in (*app.registered_commands, *app.registered_groups):  # typer's own rich mode
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        info.rich_help_panel = panel.get(name, info.rich_help_panel)
    return app


# `neuron_env.cli.app` is also the submodule cli/app.py, which the import above bound here:
# unbound, the name reaches __getattr__, which gives the typer app with every command
globals().pop("app", None)


def __getattr__(name: str):
    if name == "app":
        return register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["COMMANDS", "PANELS", "app", "main", "register"]
