"""`neuron-env matrix list|show|validate|import`."""

from pathlib import Path

import typer

from neuron_env.cli.app import Fmt, emit, matrix_app, output_dir, seconds, split

MATRIX_DIR = typer.Option(None, "--matrix-dir", help="Also read neuron-<release>.toml from DIR "
                          "(repeatable).")


@matrix_app.command("list")
def matrix_list(matrix_dir: list[Path] = MATRIX_DIR,
                format: Fmt = typer.Option(Fmt.text, "--format")) -> None:
    """List the matrices: bundled, the user's matrix directory and --matrix-dir."""
    from neuron_env.commands import matrix as cmd

    emit(lambda: cmd.list_doc(matrix_dir or []), format.value,
         "neuron-env.matrix-list/1")


@matrix_app.command("show")
def matrix_show(release: str = typer.Argument(None, help="A release (2.34, 2.31) or a TOML "
                                               "file; default the newest."),
                format: Fmt = typer.Option(Fmt.text, "--format"),
                matrix_dir: list[Path] = MATRIX_DIR,
                verbose: bool = typer.Option(False, "-v", "--verbose",
                                             help="Also list every fact's sources.")) -> None:
    """Show one release's matrix as a table or as neuron-env.matrix/1 JSON."""
    from neuron_env.commands import matrix as cmd

    emit(lambda: cmd.show_doc(release, matrix_dir or [], verbose), format.value,
         cmd.SCHEMA)


@matrix_app.command("validate")
def matrix_validate(paths: list[Path] = typer.Argument(..., help="Matrix files or directories."),
                    format: Fmt = typer.Option(Fmt.text, "--format")) -> None:
    """Validate matrix files: exit 0 when all are valid, 2 otherwise (every problem listed)."""
    from neuron_env.commands import matrix as cmd

    emit(lambda: cmd.validate_doc(paths), format.value, "neuron-env.matrix-validate/1")


@matrix_app.command("import")
def matrix_import(manifest: Path = typer.Argument(..., help="AWS's n2-manifest.json."),
                  out: Path = typer.Option(Path("matrices"), "--out", callback=output_dir,
                                           help="Directory to write "
                                           "neuron-<release>.toml files into."),
                  release: list[str] = typer.Option(None, "--release", help="Only these "
                                                    "releases (2.31.1, or 2.31 for all 2.31.x)."),
                  dry_run: bool = typer.Option(False, "--dry-run", help="Say what would "
                                               "be written; write nothing."),
                  format: Fmt = typer.Option(Fmt.text, "--format")) -> None:
    """Turn AWS's release manifest into matrix files for the XLA-based releases."""
    from neuron_env.commands import matrix as cmd

    emit(lambda: cmd.import_doc(manifest, out, split(release), dry_run), format.value,
         "neuron-env.matrix-import/1")


@matrix_app.command("update")
def matrix_update(source: str = typer.Option(..., "--from", metavar="URL|s3://BUCKET/KEY",
                                             help="A matrix TOML pinned as URL#sha256=HEX, or a "
                                             "manifest (JSON) that pins each file's sha256."),
                  sha256: str = typer.Option(None, "--sha256", help="The pinned digest of a "
                                             "single matrix file (instead of #sha256=)."),
                  into: Path = typer.Option(None, "--dir", callback=output_dir,
                                            help="Write here instead of the "
                                            "user's matrix directory ($NEURON_ENV_MATRIX_DIR, "
                                            "else ~/.local/share/neuron-env/matrices)."),
                  ca_bundle: str = typer.Option(None, "--ca-bundle", metavar="FILE",
                                                help="CA certificates for https:// (default: "
                                                "the system's, or SSL_CERT_FILE)."),
                  timeout: float = typer.Option(30.0, "--timeout", metavar="SECONDS",
                                                callback=seconds,
                                                help="Limit for each download."),
                  allow_older: bool = typer.Option(False, "--allow-older", help="Also add "
                                                   "releases older than the newest known."),
                  manifest_key: Path = typer.Option(None, "--manifest-key", metavar="PEM",
                                                    help="Require a signed manifest: "
                                                    "URL.sig must verify with this public key."),
                  dry_run: bool = typer.Option(False, "--dry-run", help="Say what would "
                                               "be written; write nothing."),
                  format: Fmt = typer.Option(Fmt.text, "--format")) -> None:
    """Fetch newer matrix files (verified, validated) into the user's matrix directory."""
    from neuron_env.commands import matrix_update as cmd

    emit(lambda: cmd.update_doc(source, sha256, into, ca_bundle, timeout, allow_older,
                                dry_run, manifest_key), format.value, cmd.SCHEMA)
