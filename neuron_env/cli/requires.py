"""Options that mean something only beside another: ONE table, checked once, before the command
runs (app.emit), so that no option is silently ignored. `trial --strategy fsdp2` without
`--world-size` is exit 2 naming what it needs, never a single-process run that exits 0.

An option counts as given when it came from the command line or the environment (not its
default); a flag partner counts only when on. tests/unit/test_cli_requires.py walks every
command's options: one whose help says "With --X" must be declared here."""

from typing import Any

from neuron_env.errors import UsageError

# command path -> {option's parameter name -> the options it needs (any one of them)}
REQUIRES: dict[str, dict[str, tuple[str, ...]]] = {
    "doctor": {
        "yes": ("fix",),
        "collectives": ("smoke",),
        "smoke_timeout": ("smoke",),
        "strict_publish": ("tag_instance", "publish_ssm"),
        "reason": ("waive",),
        "until": ("waive",),
    },
    "trial": {
        "strategy": ("world_size",),
        "nnodes": ("world_size",),
        "print_launch": ("world_size",),
        "collect": ("world_size",),
        "compile_backend": ("compile",),
        "lr": ("steps",),
    },
    "collectives": {
        "nodes": ("print_launch",),
        "nproc_per_node": ("print_launch",),
    },
}


def _given(ctx: Any, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    if source is None or source.name not in ("COMMANDLINE", "ENVIRONMENT"):
        return False
    value = ctx.params.get(name)
    return value not in (False, None, (), [])


def _flag(ctx: Any, name: str) -> str:
    for p in ctx.command.params:
        if p.name == name:
            return max(getattr(p, "opts", None) or [name], key=len)
    return f"--{name.replace('_', '-')}"


def path_of(ctx: Any) -> str:
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(names)


def check(ctx: Any) -> None:
    """Exit 2 (UsageError) for the first option given without any option it needs."""
    if ctx is None:
        return
    table = REQUIRES.get(path_of(ctx), {})
    for name, partners in table.items():
        if _given(ctx, name) and not any(_given(ctx, p) for p in partners):
            need = " or ".join(_flag(ctx, p) for p in partners)
            raise UsageError(f"{_flag(ctx, name)} needs {need}: without it, "
                             f"{_flag(ctx, name)} would be ignored",
                             hint=f"add {need}, or drop {_flag(ctx, name)}")


def current_context() -> Any:
    """The running command's click context (typer >= 0.28 carries its own click), or None."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - typer < 0.28 runs on click
        from click import get_current_context  # type: ignore[no-redef]
    return get_current_context(silent=True)
