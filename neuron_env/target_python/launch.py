"""Start a target Python: absolute path, isolation mode, safe cwd, one environment builder, the
funnel's timeout. See the package docstring for the modes."""

from __future__ import annotations

import atexit
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from neuron_env.guards import proc
from neuron_env.inside import script

TOOL = ("-I", "-X", "utf8")  # isolated: no PYTHON* env, no user site, no cwd on sys.path
SAFE_CWD = "/"
_workdir: list[str] = []  # the private cwd of WORKLOAD runs, made once per process


def interpreter(python: str) -> str:
    """An absolute path (the cwd of the child is not the caller's); a bare name stays one."""
    if os.sep not in python or os.path.isabs(python):
        return python
    return os.path.join(os.getcwd(), python)  # not normpath'd: a symlinked dir keeps its name


def target_env(extra: Mapping[str, str] | None = None,
               drop: Sequence[str] = ()) -> dict[str, str]:
    """THE environment builder: the caller's environment, UTF-8 and unbuffered streams,
    `extra` on top, variables starting with any of `drop` removed."""
    env = {k: v for k, v in os.environ.items() if not (drop and k.startswith(tuple(drop)))}
    env.update(PYTHONIOENCODING="utf-8", PYTHONUNBUFFERED="1")
    env.update(extra or {})
    return env


def workdir() -> str:
    """A fresh private directory (0700) for WORKLOAD runs' cwd, removed when neuron-env ends."""
    if not _workdir:
        import tempfile

        d = tempfile.mkdtemp(prefix="neuron-env-target-")
        atexit.register(shutil.rmtree, d, True)
        _workdir.append(d)
    return _workdir[0]


def tool_argv(python: str, args: Sequence[str]) -> list[str]:
    return [interpreter(python), *TOOL, *args]


def script_argv(python: str, name: str, payload: Mapping[str, Any] | None) -> list[str]:
    argv = [interpreter(python), str(script(name))]
    return argv if payload is None else [*argv, json.dumps(payload)]


# -- TOOL mode: isolated, cwd / ------------------------------------------------------------
def spawn_tool(python: str, args: Sequence[str], *, timeout: float,
               env: Mapping[str, str] | None = None) -> proc.Running:
    return proc.spawn(tool_argv(python, args), timeout=timeout, env=target_env(env),
                      cwd=SAFE_CWD)


def spawn_probe(python: str, name: str, *, timeout: float,
                args: Sequence[str] = ()) -> proc.Running:
    """inside/NAME in TOOL mode: doctor's and install's probe (probe.py, stdlib only) and
    doctor's companion import probe (companions.py, `args`: the modules to import)."""
    return spawn_tool(python, [str(script(name)), *args], timeout=timeout)


def module_argv(python: str, module: str, *args: str) -> tuple[str, ...]:
    """`python -m MODULE ARGS` (install's pip); `isolated` adds the TOOL flags when it runs."""
    return (interpreter(python), "-m", module, *args)


def run_tool(python: str, args: Sequence[str], *, timeout: float,
             env: Mapping[str, str] | None = None) -> proc.Completed:
    return spawn_tool(python, args, timeout=timeout, env=env).result()


def isolated(argv: Sequence[str]) -> list[str]:
    """`PY -m MODULE ...` (install's pip) with the TOOL flags after the interpreter; any other
    command (uv) unchanged."""
    if len(argv) > 2 and argv[1] == "-m":
        return [interpreter(argv[0]), *TOOL, *argv[1:]]
    return list(argv)


def stream_command(argv: Sequence[str], *, timeout: float, sink: Callable[[bytes], None],
                   tick: Callable[[float], None] | None = None,
                   env: Mapping[str, str] | None = None) -> proc.Completed:
    """Stream mode (install's installer steps): output to `sink` as it comes; cwd /."""
    return proc.stream(isolated(argv), timeout=timeout, sink=sink, tick=tick,
                       env=dict(env) if env is not None else target_env(), cwd=SAFE_CWD)


def version(python: str, timeout: float = 5.0) -> proc.Completed:
    """`python --version` (no flags: a Python 2 must still say what it is); cwd /."""
    return proc.run([interpreter(python), "--version"], timeout=timeout, cwd=SAFE_CWD)


# -- WORKLOAD mode: an inside/ script, the caller's environment, a private cwd -------------
def spawn_script(python: str, name: str, payload: Mapping[str, Any] | None, *, timeout: float,
                 env: Mapping[str, str] | None = None, keep_cwd: bool = False) -> proc.Running:
    """Start inside/NAME with its JSON payload. keep_cwd: trial (its MODEL is cwd-relative)."""
    return proc.spawn(script_argv(python, name, payload), timeout=timeout,
                      env=dict(env) if env is not None else target_env(),
                      cwd=None if keep_cwd else workdir())


def run_script(python: str, name: str, payload: Mapping[str, Any] | None, *, timeout: float,
               env: Mapping[str, str] | None = None) -> proc.Completed:
    return spawn_script(python, name, payload, timeout=timeout, env=env).result()


def run_code(python: str, code: str, *, timeout: float) -> proc.Completed:
    """`python -c CODE` as a workload sees the target (its environment kept; the cwd, which
    `-c` puts on sys.path, is the private directory): the collectives' device count."""
    return proc.run([interpreter(python), "-c", code], timeout=timeout, env=target_env(),
                    cwd=workdir())


def script_path(name: str) -> str:
    """Where inside/NAME lives (for commands printed for a real cluster: --print-launch)."""
    return str(script(name))


def module_line(python: str, module: str, *args: str) -> list[str]:
    """THE argv of a workload's `python -m MODULE ARGS`, for neuron-env's own launches
    (spawn_module) and the lines it prints for an operator to paste (`--print-launch`: trial's
    torchrun agents, collectives' ranks when neuron-env is not on PATH): through
    inside/run_module.py, because `-m` puts the cwd first on sys.path (a `json.py` where the
    line runs would run in the agent and every rank); run_module.py puts neither the cwd nor
    its own folder there, on every Python the inside/ scripts support (-P needs 3.11)."""
    return [python, script_path("run_module.py"), module, *args]


def spawn_module(python: str, module: str, args: Sequence[str], *, timeout: float,
                 env: Mapping[str, str] | None = None, keep_cwd: bool = False) -> proc.Running:
    """WORKLOAD mode `python -m MODULE ARGS` (trial's torchrun agents, which start inside/
    scripts named in ARGS: see script_path), by module_line."""
    return proc.spawn(module_line(interpreter(python), module, *args),
                      timeout=timeout, env=dict(env) if env is not None else target_env(),
                      cwd=None if keep_cwd else workdir())
