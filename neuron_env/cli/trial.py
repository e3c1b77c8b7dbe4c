"""`neuron-env trial MODEL`: flags -> TrialOptions -> commands.trial -> the boundary."""

import typer

from neuron_env.cli.app import Device, app, choices, emit, python_option, seconds

Dtype = choices("Dtype", "float32", "bfloat16")


TrialFmt = choices("TrialFmt", "text", "json", "junit", "markdown")


@app.command()
def trial(
    model: str = typer.Argument(..., help="module:callable, path/to/file.py:callable or "
                                "builtin:mlp|conv|transformer-block|embedding. The callable "
                                "returns (model, example_inputs[, loss_fn])."),
    python: str = python_option(),
    device: Device = typer.Option(Device.neuron, "--device", help="Where the model runs."),
    dtype: Dtype = typer.Option(Dtype.float32, "--dtype", help="The dtype on the device."),
    autocast: bool = typer.Option(False, "--autocast", help="Run under autocast(bfloat16)."),
    rtol: float = typer.Option(None, "--rtol", help="Relative tolerance (default per dtype)."),
    atol: float = typer.Option(None, "--atol", help="Absolute tolerance, relative to each "
                               "tensor's largest reference magnitude (default per dtype)."),
    steps: int = typer.Option(0, "--steps", help="Also N SGD steps; parameter drift compared."),
    lr: float = typer.Option(0.01, "--lr", help="Learning rate of the --steps optimizer."),
    iterations: int = typer.Option(10, "--iterations", help="Steady-state timed runs."),
    compile: bool = typer.Option(False, "--compile", help="Also torch.compile(dynamic=False)."),
    compile_backend: str = typer.Option(None, "--compile-backend", metavar="NAME",
                                        help="Default: neuron "
                                             "(neuron), inductor (cuda), aot_eager (cpu)."),
    shapes: str = typer.Option(None, "--shapes", metavar="SHAPE,..",
                               help="Compiled shape sweep of the first "
                                    "input, e.g. 8x128,16x128."),
    batch_sizes: str = typer.Option(None, "--batch-sizes", metavar="N,..",
                                    help="Compiled batch-size sweep, "
                                         "e.g. 8,16,32."),
    save_baseline: str = typer.Option(None, "--save-baseline", metavar="FILE",
                                      help="Save this run's tensors as a baseline."),
    baseline: str = typer.Option(None, "--baseline", metavar="FILE",
                                 help="Compare with a baseline saved elsewhere."),
    no_fallback: bool = typer.Option(False, "--no-fallback", help="A CPU fallback fails."),
    inference: bool = typer.Option(False, "--inference", help="Forward only, in eval mode: "
                                   "no backward, no optimizer."),
    generate: int = typer.Option(0, "--generate", metavar="N", help="Also N greedy decode "
                                 "steps with the KV cache (generate()), tokens vs the CPU."),
    seed: int = typer.Option(0, "--seed", help="Seed for weights and inputs."),
    timeout: float = typer.Option(600.0, "--timeout", metavar="SECONDS", callback=seconds,
                                  help="Hard limit for the whole run."),
    format: TrialFmt = typer.Option(TrialFmt.text, "--format"),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show details too."),
) -> None:
    """Run YOUR model on the device.

    Forward/backward vs a CPU reference, CPU-fallback ops,
    torch.compile, compile vs steady-state time, shape sweeps, baselines."""
    def produce():
        from neuron_env.smoke.live import for_format
        from neuron_env.trial.options import TrialOptions, parse_shapes, parse_sizes

        live = for_format(format.value, "trial")
        opts = TrialOptions(
            model=model, device=device.value, dtype=dtype.value, autocast=autocast, rtol=rtol,
            atol=atol,
            steps=steps, lr=lr, iterations=iterations, compile=compile,
            compile_backend=compile_backend, shapes=parse_shapes(shapes),
            batch_sizes=parse_sizes(batch_sizes), save_baseline=save_baseline,
            baseline=baseline, no_fallback=no_fallback, seed=seed, timeout=timeout,
            inference=inference, generate=generate)
        from neuron_env.commands.trial import start

        started = start(python, opts)  # the target imports torch while we import the rest
        from neuron_env.commands.trial import trial as run_trial

        return run_trial(started, opts, live)

    emit(produce, format.value, "neuron-env.trial/1", verbose=verbose)
