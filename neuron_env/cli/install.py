"""`neuron-env install`: flags -> InstallOptions -> commands.install.run -> the boundary."""

from enum import Enum

import typer

from neuron_env.cli.app import (
    Fmt,
    app,
    emit,
    index_option,
    matrix_option,
    python_option,
    seconds,
    split,
)

INTERRUPTED = ("install interrupted; nothing more was changed (an install already under way is "
               "marked incomplete: re-run to repair)")


class Backend(str, Enum):
    neuron = "neuron"
    emulated = "emulated"


class Installer(str, Enum):
    pip = "pip"
    uv = "uv"


@app.command(epilog="\b\nExamples:\n  neuron-env install --venv ~/neuron-venv --python "
             "/usr/bin/python3.12\n  neuron-env install --python ~/venv/bin/python --dry-run\n"
             "  neuron-env install --backend emulated --venv /tmp/rehearsal --yes")
def install(
    matrix: str = matrix_option("A bundled release (2.34) or a TOML file."),
    python: str = python_option("Interpreter of the environment to install into (or to "
                                "create --venv with)."),
    root: str = typer.Option(None, "--root", metavar="DIR", help="Read host files (OS) under DIR."),
    torch: str = typer.Option(None, "--torch", help="The torch pair: 2.14 or 2.13 (default: "
                              "the newest for the target's Python)."),
    backend: Backend = typer.Option(Backend.neuron, "--backend", help="neuron (torch-neuronx) or "
                                "emulated (the CPU-emulated device shipped with neuron-env)."),
    venv: str = typer.Option(None, "--venv", metavar="DIR", help="Install into this venv; "
                             "created (with --python) when it does not exist."),
    installer: Installer = typer.Option(None, "--installer", help="Default: uv where installed, "
                                  "else pip. Resolution always uses pip --report."),
    find_links: list[str] = typer.Option(None, "--find-links", metavar="DIR", help="A "
                                         "wheelhouse directory (repeatable)."),
    offline: bool = typer.Option(False, "--offline", help="No index: only --find-links."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; change nothing."),
    force: bool = typer.Option(False, "--force", help="Install even where the matrix says the "
                               "Python/OS/architecture is unsupported (said loudly)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Never prompt."),
    format: Fmt = typer.Option(Fmt.text, "--format"),
    neuron_index_url: str = index_option("neuron", from_env=False),
    pytorch_index_url: str = index_option("pytorch", from_env=False),
    timeout: float = typer.Option(1800.0, "--timeout", callback=seconds,
                                  help="Limit per installer step (s)."),
    lock_timeout: float = typer.Option(900.0, "--lock-timeout", callback=seconds,
                                       help="How long to wait for "
                                       "another install into the same environment (s)."),
    with_: list[str] = typer.Option(None, "--with", metavar="NAME,..", help="Also install "
                                    "these torch companions (torchvision, torchaudio, torchao) "
                                    "in the build for the plan's torch, from torch's index."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show details too."),
) -> None:
    """Install the matching backend. Into a target environment, from the right indexes."""
    from neuron_env.commands.install import SCHEMA, InstallOptions, run

    emit(lambda: run(InstallOptions(
        matrix=matrix, python=python, root=root, torch=torch, backend=backend.value, venv=venv,
        installer=installer.value if installer else None,
        find_links=tuple(find_links or ()), offline=offline,
        dry_run=dry_run, force=force, yes=yes, neuron_index_url=neuron_index_url,
        pytorch_index_url=pytorch_index_url, timeout=timeout, lock_timeout=lock_timeout,
        quiet=quiet, with_=tuple(split(with_)))), format.value, SCHEMA, verbose=verbose,
        interrupted=INTERRUPTED)
