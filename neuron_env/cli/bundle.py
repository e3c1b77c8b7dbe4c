"""`neuron-env bundle`."""

import typer

from neuron_env.cli.app import (
    Fmt,
    app,
    emit,
    matrix_option,
    output_path,
    python_option,
    root_option,
)

EXAMPLES = """\b
Examples:
  neuron-env bundle                              # ./neuron-env-bundle-<time>.tar.gz
  neuron-env bundle --out /tmp/case.tar.gz --python ~/venv/bin/python
  neuron-env bundle --list                       # what would go in, nothing written"""


@app.command(epilog=EXAMPLES)
def bundle(
    out: str = typer.Option(None, "--out", callback=output_path,
                            metavar="FILE", help="The archive to write "
                            "(.tar.gz)."),
    python: str = python_option(),
    matrix: str = matrix_option(),
    root: str = root_option(),
    list_only: bool = typer.Option(False, "--list", help="List the content; write nothing."),
    format: Fmt = typer.Option(Fmt.text, "--format", help="Output on stdout."),
) -> None:
    """Write a support archive. Doctor report, packages, neuron-ls, dmesg, logs; masked."""
    from neuron_env.commands import bundle as cmd

    emit(lambda: cmd.run(cmd.BundleOptions(out=out, python=python, matrix=matrix, root=root,
                                           list_only=list_only)), format.value, cmd.SCHEMA)
