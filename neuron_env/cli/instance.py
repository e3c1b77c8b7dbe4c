"""`neuron-env instance [TYPE]`."""

import typer

from neuron_env.cli.app import Fmt, app, emit, matrix_option, root_option


@app.command(epilog="\b\nExamples:\n  neuron-env instance            # this instance\n"
             "  neuron-env instance trn2.48xlarge --aws --dlami ubuntu-24.04")
def instance(
    type_: str = typer.Argument(None, metavar="[TYPE]", help="e.g. trn2.48xlarge (default: "
                                "this instance)."),
    matrix: str = matrix_option(),
    aws: bool = typer.Option(False, "--aws", help="Also EC2 DescribeInstanceTypes' NeuronInfo."),
    dlami: str = typer.Option(None, "--dlami", metavar="OS", help="The Neuron DLAMI image id "
                              "for OS (ubuntu-24.04) from the public SSM parameters."),
    root: str = root_option(),
    format: Fmt = typer.Option(Fmt.text, "--format"),
) -> None:
    """An instance type's Neuron facts. Devices, cores, memory; EC2's view; the DLAMI."""
    from neuron_env.commands import instance as cmd
    from neuron_env.report.model import Document

    emit(lambda: Document(cmd.run(type_, matrix, aws, dlami, root), cmd.text), format.value,
         cmd.SCHEMA)
