"""The command line: `app.py` holds the typer app and the one boundary; each other module here
parses one command's flags and hands a producer to `app.emit`. Importing this package
registers every command."""

from neuron_env.cli import (  # noqa: F401
    bootstrap,
    collectives,
    doctor,
    engines,
    fleet,
    install,
    instance,
    matrix,
    smoke,
)
from neuron_env.cli.app import app, main

__all__ = ["app", "main"]
