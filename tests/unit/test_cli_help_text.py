"""Small true words: usage names a required argument plainly (MODEL, not {model}); every option
has help; a speed-up reads one way only."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import typer

from neuron_env.cli import COMMANDS, app, lazy
from tests.helpers.cli import REPO


def test_usage_names_required_arguments_plainly():
    group = lazy.command(app, COMMANDS)
    for name in ("trial", "matrix"):
        cmd = group.commands[name]
        subs = list(getattr(cmd, "commands", {}).values()) or [cmd]
        for c in subs:
            ctx = c.make_context(c.name, ["--help"], resilient_parsing=True)
            usage = c.get_usage(ctx)
            assert "{" not in usage, usage
    trial = group.commands["trial"]
    assert "trial [OPTIONS] MODEL" in trial.get_usage(
        trial.make_context("trial", ["x"], resilient_parsing=True))


def test_every_option_has_help():
    group = typer.main.get_command(app)
    missing = []

    def walk(cmd, path):
        for p in cmd.params:
            if p.param_type_name == "option" and not getattr(p, "help", None) and \
                    p.name not in ("format",):
                missing.append(f"{path} {max(p.opts, key=len)}")
        for n, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {n}".strip())
    walk(group, "")
    assert not missing, missing


def _trial_compile():
    path = REPO / "neuron_env/inside/_trial_compile.py"
    sys.path.insert(0, str(Path(path).parent))
    try:
        spec = importlib.util.spec_from_file_location("_trial_compile_for_test", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(Path(path).parent))


def test_a_speed_up_reads_one_way():
    words = _trial_compile().speed_words
    assert words(2.82) == " (2.82x faster than eager)"
    assert words(0.5) == " (2.00x slower than eager)" and words(None) == ""
