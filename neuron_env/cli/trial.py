"""`neuron-env trial MODEL`: flags -> TrialOptions -> commands.trial -> the boundary."""

from enum import Enum

import typer

from neuron_env.cli.app import (
    Device,
    Dtype,
    TrialFmt,
    app,
    count,
    emit,
    learning_rate,
    output_path,
    positive,
    price,
    python_option,
    report_outputs,
    seconds,
    tolerance,
)
from neuron_env.trial.options import TrialFlags


class Strategy(str, Enum):
    ddp = "ddp"
    fsdp2 = "fsdp2"


class Launcher(str, Enum):
    torchrun = "torchrun"
    srun = "srun"


T = TrialFlags  # trial's defaults, declared once (trial/options.py)


@app.command()
def trial(
    model: str = typer.Argument(..., metavar="MODEL", help="module:callable, "
                                "path/to/file.py:callable or "
                                "builtin:mlp|conv|transformer-block|embedding. The callable "
                                "returns (model, example_inputs[, loss_fn])."),
    python: str = python_option(),
    device: Device = typer.Option(T.device, "--device", help="Where the model runs."),
    dtype: Dtype = typer.Option(T.dtype, "--dtype", help="The dtype on the device."),
    autocast: bool = typer.Option(T.autocast, "--autocast",
                                  help="Run under autocast(bfloat16)."),
    rtol: float = typer.Option(None, "--rtol", callback=tolerance,
                               help="Relative tolerance: an element passes when "
                               "|a-b| <= atol + rtol*|b|, as torch.allclose (default per dtype)."),
    atol: float = typer.Option(None, "--atol", callback=tolerance,
                               help="Absolute tolerance, in the tensor's units (not scaled): "
                               "|a-b| <= atol + rtol*|b| (default per dtype)."),
    steps: int = typer.Option(T.steps, "--steps", callback=count,
                              help="Also N SGD steps; parameter drift compared."),
    lr: float = typer.Option(T.lr, "--lr", callback=learning_rate,
                             help="With --steps: the optimizer's learning rate."),
    iterations: int = typer.Option(T.iterations, "--iterations", callback=positive,
                                   help="Steady-state timed runs."),
    compile: bool = typer.Option(T.compile, "--compile",
                                 help="Also torch.compile(dynamic=False)."),
    compile_backend: str = typer.Option(None, "--compile-backend", metavar="NAME",
                                        help="With --compile: the backend (default: neuron "
                                             "(neuron), inductor (cuda), aot_eager (cpu))."),
    shapes: str = typer.Option(None, "--shapes", metavar="SHAPE,..",
                               help="Compiled shape sweep of the first "
                                    "input, e.g. 8x128,16x128."),
    batch_sizes: str = typer.Option(None, "--batch-sizes", metavar="N,..",
                                    help="Compiled batch-size sweep, "
                                         "e.g. 8,16,32."),
    save_baseline: str = typer.Option(None, "--save-baseline", callback=output_path, metavar="FILE",
                                      help="Save this run's tensors as a baseline."),
    baseline: str = typer.Option(None, "--baseline", metavar="FILE",
                                 help="Compare with a baseline saved elsewhere."),
    no_fallback: bool = typer.Option(T.no_fallback, "--no-fallback",
                                     help="A CPU fallback fails."),
    inference: bool = typer.Option(T.inference, "--inference", help="Forward only, in eval mode: "
                                   "no backward, no optimizer."),
    generate: int = typer.Option(T.generate, "--generate", callback=count,
                                 metavar="N", help="Also N greedy decode "
                                 "steps with the KV cache (generate()), tokens vs the CPU."),
    seed: int = typer.Option(T.seed, "--seed", callback=count,
                             help="Seed for weights and inputs."),
    timeout: float = typer.Option(T.timeout, "--timeout", metavar="SECONDS", callback=seconds,
                                  help="Hard limit for the whole run."),
    world_size: int = typer.Option(None, "--world-size", callback=positive, metavar="N",
                                   help="Distributed trial: N ranks, each its shard of the "
                                        "batch, checked against one process."),
    strategy: Strategy = typer.Option(T.strategy, "--strategy",
                                      help="With --world-size: DDP or FSDP2 (fully_shard)."),
    nnodes: int = typer.Option(T.nnodes, "--nnodes", callback=positive, metavar="M",
                               help="With --world-size: M torchrun agents on this host (c10d "
                                    "rendezvous on loopback), a multi-node rehearsal."),
    print_launch: Launcher = typer.Option(None, "--print-launch",
                                          help="With --world-size: print the commands for a "
                                               "real cluster and exit."),
    collect: str = typer.Option(None, "--collect", metavar="RUN_DIR",
                                help="With --world-size: the verdict of a run launched with "
                                     "--print-launch's commands, from its RUN_DIR."),
    price_per_hour: float = typer.Option(None, "--price-per-hour", callback=price, metavar="USD",
                                         help="The instance's hourly price, for the cost "
                                              "($/1,000 samples; one process or --world-size)."),
    instance_type: str = typer.Option(None, "--instance-type", metavar="TYPE",
                                      help="The instance type whose price the cost uses "
                                           "(default: this host's)."),
    region: str = typer.Option(None, "--region", metavar="REGION",
                               help="The price's region "
                                    "(default: environment, IMDS, us-east-1)."),
    aws: bool = typer.Option(T.aws, "--aws", help="The price from the AWS Pricing API "
                             "(boto3)."),
    format: TrialFmt = typer.Option(T.format, "--format"),
    report: list[str] = typer.Option(None, "--report", metavar="FORMAT:PATH",
                                     callback=report_outputs,
                                     help="Also write a report, e.g. html:trial.html "
                                          "(repeatable), on every exit."),
    verbose: bool = typer.Option(T.verbose, "-v", "--verbose", help="Show details too."),
) -> None:
    """Run YOUR model on the device.

    Forward/backward vs a CPU reference, CPU-fallback ops,
    torch.compile, compile vs steady-state time, shape sweeps, baselines."""
    from neuron_env.commands import trial as cmd

    flags = TrialFlags(  # the command line as one typed record (trial/options.py)
        model=model, python=python, device=device.value, dtype=dtype.value, autocast=autocast,
        rtol=rtol, atol=atol, steps=steps, lr=lr, iterations=iterations, compile=compile,
        compile_backend=compile_backend, shapes=shapes, batch_sizes=batch_sizes,
        save_baseline=save_baseline, baseline=baseline, no_fallback=no_fallback,
        inference=inference, generate=generate, seed=seed, timeout=timeout,
        world_size=world_size, strategy=strategy.value, nnodes=nnodes,
        print_launch=print_launch.value if print_launch is not None else None,
        collect=collect, price_per_hour=price_per_hour, instance_type=instance_type,
        region=region, aws=aws, format=format.value, report=tuple(report or ()),
        verbose=verbose)
    emit(lambda: cmd.run_flags(flags), flags.format, "neuron-env.trial/1",
         verbose=flags.verbose, reports=flags.report)
