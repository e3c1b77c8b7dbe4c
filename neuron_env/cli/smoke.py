"""`neuron-env smoke`: flags -> SmokeOptions -> commands.smoke -> the boundary."""

from __future__ import annotations

import typer

from neuron_env.cli.app import Fmt, app, emit


@app.command()
def smoke(
    python: str = typer.Option(None, "--python", help="Interpreter of the environment to test."),
    device: str = typer.Option("neuron", "--device", help="neuron, cpu or cuda."),
    size: int = typer.Option(1024, "--size", help="Matmul size N (N x N)."),
    dtype: str = typer.Option("float32", "--dtype", help="float32 or bfloat16."),
    rtol: float = typer.Option(None, "--rtol", help="Override the dtype's relative tolerance."),
    atol: float = typer.Option(None, "--atol", help="Override the dtype's absolute tolerance."),
    iterations: int = typer.Option(10, "--iterations", help="Steady-state iterations."),
    backward: bool = typer.Option(False, "--backward", help="Also an MLP training step."),
    compile: bool = typer.Option(False, "--compile", help="Also the MLP under torch.compile."),
    no_fallback: bool = typer.Option(False, "--no-fallback", help="A CPU fallback fails."),
    timeout: float = typer.Option(300.0, "--timeout", help="Hard limit for the whole run (s)."),
    format: Fmt = typer.Option(Fmt.text, "--format"),
) -> None:
    """Compute on the device: matmul vs CPU, first call vs steady state, CPU-fallback ops."""
    def produce():
        # start the target first: its `import torch` runs while neuron-env loads the rest
        from neuron_env.smoke.start import SmokeOptions, start_flag

        opts = SmokeOptions(
            device=device, size=size, dtype=dtype, rtol=rtol, atol=atol, iterations=iterations,
            backward=backward, compile=compile, no_fallback=no_fallback, timeout=timeout)
        started = start_flag(python, opts)
        from neuron_env.commands.smoke import smoke as run_smoke

        return run_smoke(python, opts, started)

    emit(produce, format.value, "neuron-env.smoke/1")
