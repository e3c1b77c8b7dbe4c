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


class Strategy(str, Enum):
    ddp = "ddp"
    fsdp2 = "fsdp2"


class Launcher(str, Enum):
    torchrun = "torchrun"
    srun = "srun"


@app.command()
def trial(
    model: str = typer.Argument(..., metavar="MODEL", help="module:callable, "
                                "path/to/file.py:callable or "
                                "builtin:mlp|conv|transformer-block|embedding. The callable "
                                "returns (model, example_inputs[, loss_fn])."),
    python: str = python_option(),
    device: Device = typer.Option(Device.neuron, "--device", help="Where the model runs."),
    dtype: Dtype = typer.Option(Dtype.float32, "--dtype", help="The dtype on the device."),
    autocast: bool = typer.Option(False, "--autocast", help="Run under autocast(bfloat16)."),
    rtol: float = typer.Option(None, "--rtol", callback=tolerance,
                               help="Relative tolerance: an element passes when "
                               "|a-b| <= atol + rtol*|b|, as torch.allclose (default per dtype)."),
    atol: float = typer.Option(None, "--atol", callback=tolerance,
                               help="Absolute tolerance, in the tensor's units (not scaled): "
                               "|a-b| <= atol + rtol*|b| (default per dtype)."),
    steps: int = typer.Option(0, "--steps", callback=count,
                              help="Also N SGD steps; parameter drift compared."),
    lr: float = typer.Option(0.01, "--lr", callback=learning_rate,
                             help="With --steps: the optimizer's learning rate."),
    iterations: int = typer.Option(10, "--iterations", callback=positive,
                                   help="Steady-state timed runs."),
    compile: bool = typer.Option(False, "--compile", help="Also torch.compile(dynamic=False)."),
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
    no_fallback: bool = typer.Option(False, "--no-fallback", help="A CPU fallback fails."),
    inference: bool = typer.Option(False, "--inference", help="Forward only, in eval mode: "
                                   "no backward, no optimizer."),
    generate: int = typer.Option(0, "--generate", callback=count,
                                 metavar="N", help="Also N greedy decode "
                                 "steps with the KV cache (generate()), tokens vs the CPU."),
    seed: int = typer.Option(0, "--seed", callback=count, help="Seed for weights and inputs."),
    timeout: float = typer.Option(600.0, "--timeout", metavar="SECONDS", callback=seconds,
                                  help="Hard limit for the whole run."),
    world_size: int = typer.Option(None, "--world-size", callback=positive, metavar="N",
                                   help="Distributed trial: N ranks, each its shard of the "
                                        "batch, checked against one process."),
    strategy: Strategy = typer.Option(Strategy.ddp, "--strategy",
                                      help="With --world-size: DDP or FSDP2 (fully_shard)."),
    nnodes: int = typer.Option(1, "--nnodes", callback=positive, metavar="M",
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
    aws: bool = typer.Option(False, "--aws", help="The price from the AWS Pricing API "
                             "(boto3)."),
    format: TrialFmt = typer.Option(TrialFmt.text, "--format"),
    report: list[str] = typer.Option(None, "--report", metavar="FORMAT:PATH",
                                     callback=report_outputs,
                                     help="Also write a report, e.g. html:trial.html "
                                          "(repeatable), on every exit."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show details too."),
) -> None:
    """Run YOUR model on the device.

    Forward/backward vs a CPU reference, CPU-fallback ops,
    torch.compile, compile vs steady-state time, shape sweeps, baselines."""
    reports = tuple(report or ())

    def produce():
        from neuron_env.report.render import write_reports

        rep = run()
        write_reports(rep, reports, verbose)
        return rep

    def run():
        from neuron_env.report.render import parse_report_specs
        from neuron_env.smoke.live import for_format

        parse_report_specs(list(reports))  # a bad --report spec is exit 2 before any work
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
        if world_size is not None or print_launch is not None:
            from neuron_env.commands import trial as cmd
            from neuron_env.trial.dist_command import CostOptions
            from neuron_env.trial.distributed import DistOptions

            d = DistOptions(world_size=world_size or 2, strategy=strategy.value, nnodes=nnodes)
            if print_launch is not None:
                return cmd.distributed_launch(python, opts, d, print_launch.value)
            return cmd.distributed(python, opts, d, CostOptions(
                price_per_hour=price_per_hour, instance_type=instance_type, region=region,
                aws=aws, collect=collect))
        from neuron_env.commands.trial import start

        started = start(python, opts)  # the target imports torch while we import the rest
        from neuron_env.commands.trial import trial as run_trial

        price = None
        if price_per_hour is not None or aws or instance_type or region:  # one process's cost
            from neuron_env.cost.prices import choose

            price = choose(price_per_hour, instance_type, region, aws)
        return run_trial(started, opts, live, price)

    emit(produce, format.value, "neuron-env.trial/1", verbose=verbose, reports=reports)
