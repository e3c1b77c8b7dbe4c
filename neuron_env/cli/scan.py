"""`neuron-env scan PATH...`."""

import sys
from enum import Enum

import typer

from neuron_env.cli.app import ScanFmt, app, emit, output_path, positive, split


class Severity(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"
    never = "never"


@app.command()
def scan(
    paths: list[str] = typer.Argument(None, metavar="PATH...", help="Files or directories."),
    matrix: str = typer.Option(None, "--matrix", help="The release whose rules apply (2.34; "
                               "default the newest bundled) or a rules TOML file."),
    format: ScanFmt = typer.Option(ScanFmt.text, "--format"),
    select: list[str] = typer.Option(None, "--select", help="Only these rules (ids or "
                                     "prefixes: xla, beta.float64), comma-separated."),
    ignore: list[str] = typer.Option(None, "--ignore", help="Leave out these rules."),
    fail_on: Severity = typer.Option(Severity.warning, "--fail-on", help="Exit 1 when a "
                                     "finding is at least this severe."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 whatever is found."),
    diff: bool = typer.Option(False, "--diff", help="Print the safe rewrites as a unified "
                              "diff (applies with patch -p1); change nothing."),
    fix: bool = typer.Option(False, "--fix", help="Apply the safe rewrites to the files."),
    list_rules: bool = typer.Option(False, "--list-rules", help="Print the rules and exit."),
    jobs: int = typer.Option(None, "--jobs", "-j", callback=positive,
                             help="Processes (default: 1 for small "
                             "trees, the CPU count for big ones)."),
    output: str = typer.Option(None, "--output", "-o", metavar="PATH", callback=output_path,
                               help="Write the "
                               "report to PATH instead of stdout (a symbolic link there is "
                               "refused). End the options with -- before file names."),
) -> None:
    """Find what blocks the neuron device in source.

    From source alone: XLA-era APIs, what the beta does not support, torch.compile
    settings, CUDA-only code."""
    from neuron_env.commands import scan as cmd
    from neuron_env.errors import UsageError

    fmt = format.value

    def produce():
        if diff and fix:
            raise UsageError("--diff and --fix together: --diff previews, --fix applies",
                             hint="choose one")
        if list_rules:
            return cmd.list_rules(matrix, split(select), split(ignore), fmt)
        doc = cmd.run(paths or [], matrix=matrix, select=split(select), ignore=split(ignore),
                      fail_on=fail_on.value, exit_zero=exit_zero,
                      mode="diff" if diff else "fix" if fix else "report", jobs=jobs,
                      progress=cmd.terminal_progress if sys.stderr.isatty() else None)
        return cmd.to_file(doc, output, fmt) if output else doc

    # with --output stdout carries nothing (the report is in the file, an error on stderr)
    emit(produce, "text" if output else fmt, cmd.SCHEMA)
