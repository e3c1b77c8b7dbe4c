"""`neuron-env smoke`: flags -> SmokeOptions -> commands.smoke -> the boundary."""

import typer

from neuron_env.cli.app import (
    Device,
    Dtype,
    Fmt,
    app,
    emit,
    positive,
    python_option,
    seconds,
    tolerance,
)


@app.command(epilog="\b\nExamples:\n  neuron-env smoke --python ~/venv/bin/python\n"
             "  neuron-env smoke --dtype bfloat16 --backward --timeout 900 --format json")
def smoke(
    python: str = python_option(),
    device: Device = typer.Option(Device.neuron, "--device", help="Where to compute."),
    size: int = typer.Option(1024, "--size", callback=positive,
                             min=1, help="Matmul size N (N x N)."),
    dtype: Dtype = typer.Option(Dtype.float32, "--dtype", help="The matmul dtype."),
    rtol: float = typer.Option(None, "--rtol", callback=tolerance,
                               help="Override the dtype's relative tolerance."),
    atol: float = typer.Option(None, "--atol", callback=tolerance,
                               help="Override the dtype's absolute tolerance."),
    iterations: int = typer.Option(10, "--iterations", callback=positive,
                                   min=1, help="Steady-state iterations."),
    backward: bool = typer.Option(False, "--backward", help="Also an MLP training step."),
    compile: bool = typer.Option(False, "--compile", help="Also the MLP under torch.compile."),
    no_fallback: bool = typer.Option(False, "--no-fallback", help="A CPU fallback fails."),
    timeout: float = typer.Option(300.0, "--timeout", callback=seconds,
                                  help="Hard limit for the whole run (s)."),
    format: Fmt = typer.Option(Fmt.text, "--format"),
) -> None:
    """Compute on the device, compare with CPU. First call vs steady state, fallback ops."""
    def produce():
        # start the target first: its `import torch` runs while neuron-env loads the rest
        from neuron_env.smoke.live import for_format
        from neuron_env.smoke.start import SmokeOptions, start_flag

        live = for_format(format.value, "smoke")
        opts = SmokeOptions(
            device=device.value, size=size, dtype=dtype.value, rtol=rtol, atol=atol,
            iterations=iterations,
            backward=backward, compile=compile, no_fallback=no_fallback, timeout=timeout)
        started = start_flag(python, opts)
        from neuron_env.commands.smoke import smoke as run_smoke

        return run_smoke(python, opts, started, live)

    emit(produce, format.value, "neuron-env.smoke/1")
