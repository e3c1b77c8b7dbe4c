"""Every option counts: the typer app is walked (every command's click params). An option whose
help says "With --X" must be declared in cli/requires.REQUIRES with --X as a partner, and each
declared option given without its partner is refused (exit 2, naming what it needs); with its
partner it is accepted. Options that say nothing of a partner are used on their own."""

from __future__ import annotations

import re

import pytest
import typer

from neuron_env.cli import register, requires
from neuron_env.errors import UsageError

APP = typer.main.get_command(register())
WITH = re.compile(r"^With (--[a-z][a-z-]*)(?: or (--[a-z][a-z-]*))?[:,]")


def commands(group=APP, prefix=()):
    for name, cmd in sorted(getattr(group, "commands", {}).items()):
        if getattr(cmd, "commands", None):
            yield from commands(cmd, (*prefix, name))
        else:
            yield " ".join((*prefix, name)), cmd


COMMANDS = dict(commands())


def flag(param) -> str:
    return max(param.opts, key=len)


def sample(param) -> list[str]:
    """The option on a command line, with a value its type accepts."""
    if getattr(param, "is_flag", False):
        return [flag(param)]
    choices = getattr(param.type, "choices", None)
    value = {"INT": "2", "FLOAT": "1.5"}.get(param.type.name.upper(), "x")
    return [flag(param), str(next(iter(choices))) if choices else value]


def context(path: str, argv: list[str]):
    cmd = COMMANDS[path]
    args = ["builtin:mlp" for p in cmd.params if p.param_type_name == "argument"]
    parent = APP.make_context("neuron-env", [path.split()[0]], resilient_parsing=True)
    return cmd.make_context(path.split()[-1], [*args, *argv], parent=parent)


def declared_pairs():
    for path, table in requires.REQUIRES.items():
        for name, partners in table.items():
            yield path, name, partners


@pytest.mark.parametrize("path, name, partners", list(declared_pairs()))
def test_each_declared_option_is_refused_without_its_partner_and_taken_with_it(
        path, name, partners):
    params = {p.name: p for p in COMMANDS[path].params}
    assert name in params and all(p in params for p in partners), (path, name, partners)
    with pytest.raises(UsageError) as e:
        requires.check(context(path, sample(params[name])))
    assert e.value.exit_code == 2
    assert flag(params[name]) in e.value.message
    assert all(flag(params[p]) in e.value.message for p in partners)
    for p in partners:
        requires.check(context(path, sample(params[name]) + sample(params[p])))


def test_every_option_that_needs_another_is_declared():
    missing = []
    for path, cmd in COMMANDS.items():
        table = requires.REQUIRES.get(path, {})
        for p in cmd.params:
            m = WITH.search(getattr(p, "help", None) or "")
            if m is None:
                continue
            wanted = {x for x in m.groups() if x}
            declared = {flag(q) for q in cmd.params if q.name in table.get(p.name, ())}
            if not wanted <= declared:
                missing.append(f"{path} {flag(p)} (help: {p.help!r}) needs {wanted}")
    assert not missing, "\n".join(missing)


def test_defaults_alone_are_never_refused():
    for path in requires.REQUIRES:
        requires.check(context(path, []))


def test_the_walk_sees_the_declared_options_in_help():
    seen = {(path, p.name) for path, cmd in COMMANDS.items() for p in cmd.params
            if WITH.search(getattr(p, "help", None) or "")}
    assert seen == {(path, name) for path, name, _ in declared_pairs()}
