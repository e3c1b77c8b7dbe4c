"""Which installer runs, and the exact command lines (pip resolves; pip or uv installs)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from neuron_env.errors import ConfigurationError, UsageError
from neuron_env.install import mirrors
from neuron_env.target_python.launch import module_argv

INSTALLERS = ("pip", "uv")
NET = ["--timeout", "15", "--retries", "1"]


RAW_PROGRESS = (24, 1)  # pip's `--progress-bar raw`: `Progress CURRENT of TOTAL` lines


@dataclass(frozen=True)
class Installer:
    name: str  # pip | uv
    pip: tuple[str, ...]  # how to call pip (resolution always uses pip's --report)
    uv: str | None = None
    raw_progress: bool = False  # that pip prints its download progress as lines (>= 24.1)

    def serialize(self) -> dict:
        return {"name": self.name, "pip": " ".join(self.pip), "uv": self.uv}

    def progress_args(self) -> list[str]:
        return ["--progress-bar", "raw"] if self.raw_progress else []


def raw_progress(pip_version: str | None) -> bool:
    """Whether this pip has `--progress-bar raw` (24.1 and newer)."""
    from packaging.version import InvalidVersion, Version

    try:
        return pip_version is not None and Version(pip_version).release[:2] >= RAW_PROGRESS
    except InvalidVersion:
        return False


def own_pip_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("pip")
    except metadata.PackageNotFoundError:
        return None


def find_uv() -> str | None:
    sib = Path(sys.executable).parent / "uv"
    if sib.is_file() and os.access(sib, os.X_OK):
        return str(sib)
    return shutil.which("uv")


def choose(requested: str | None, target: str, target_has_pip: bool,
           target_pip_version: str | None = None) -> Installer:
    if requested is not None and requested not in INSTALLERS:
        raise UsageError(f"--installer {requested!r} is not one of pip, uv",
                         hint="use --installer pip or --installer uv")
    if importlib.util.find_spec("pip") is not None:
        pip, version = module_argv(sys.executable, "pip", "--python", target), own_pip_version()
    elif target_has_pip:
        pip, version = module_argv(target, "pip"), target_pip_version
    else:
        raise ConfigurationError(
            "pip is neither in neuron-env's environment nor in the target",
            hint=f"{target} -m ensurepip, or install neuron-env with pip available")
    uv = find_uv()
    if requested == "uv" and uv is None:
        raise ConfigurationError("--installer uv: uv is not installed (not on PATH)",
                                 hint="pip install uv, or use --installer pip")
    name = requested or ("uv" if uv else "pip")
    return Installer(name, pip, uv if name == "uv" else None, raw_progress(version))


class Sources(NamedTuple):
    """Where a resolution looks: flags for the command line and, apart, the index URLs for the
    environment (a command line is world-readable in /proc; index URLs may hold credentials)."""

    args: list[str]
    env: dict[str, str]


def sources(index_url: str | None, extra: list[str], find_links: tuple[str, ...],
            offline: bool, public: tuple[str, ...] = ()) -> Sources:
    """public: the plan's public indexes (used when index_url is None)."""
    args = ["--no-index"] if offline else []
    for d in find_links:
        args += ["--find-links", d]
    return Sources(args, {} if offline else mirrors.index_env(index_url, extra, public))


def resolve_cmd(inst: Installer, report: str, reqs: list[str], src: Sources,
                no_deps: bool, ignore_installed: bool = False) -> list[str]:
    """ignore_installed: report the whole set, what is already there included (a repair
    records every package it vouches for, not only those it had to fetch)."""
    return [*inst.pip, "install", "--dry-run", "--report", report, *inst.progress_args(),
            "--only-binary", ":all:", *NET, *(["--no-deps"] if no_deps else []),
            *(["--ignore-installed"] if ignore_installed else []), *src.args, *reqs]


def install_cmd(inst: Installer, target: str, lock: str, hashes: bool,
                reinstall: bool = False) -> list[str]:
    """reinstall: a repair puts back every locked file, whatever an interrupted run left."""
    if inst.name == "uv" and inst.uv:
        # --compile-bytecode: as pip does; without it every `import torch` pays the compile
        return [inst.uv, "pip", "install", "--python", target, "--no-deps", "--no-config",
                "--compile-bytecode", *(["--reinstall"] if reinstall else []),
                *(["--require-hashes"] if hashes else []), "-r", lock]
    return [*inst.pip, "install", "--no-deps", "--no-index", *inst.progress_args(), *NET,
            *(["--force-reinstall"] if reinstall else []),
            *(["--require-hashes"] if hashes else []), "-r", lock]


def check_cmd(inst: Installer) -> list[str]:
    return [*inst.pip, "check"]


def diagnose(output: str) -> tuple[str, str]:
    """(what went wrong, what to do) from an installer's output."""
    low = output.lower()
    if "no space left on device" in low or "errno 28" in low:
        return ("no space left on device", "free disk space in the environment's filesystem "
                "(and pip's cache, ~/.cache/pip), then re-run neuron-env install")
    if "read-only file system" in low or "errno 30" in low:
        return ("the environment is on a read-only file system",
                "install into a writable environment (--venv DIR)")
    if "permission denied" in low or "errno 13" in low:
        return ("permission denied writing the environment",
                "run as the environment's owner, or install into your own --venv DIR")
    if re.search(r"connection refused|newconnectionerror|name or service not known|"
                 r"failed to establish a new connection|temporary failure in name resolution",
                 low):
        return ("an index could not be reached (connection refused or DNS failure)",
                "check the index URLs (--neuron-index-url / NEURON_ENV_NEURON_INDEX_URL, "
                "--pytorch-index-url) and the network, or use --find-links/--offline")
    if "read timed out" in low or "timed out" in low:
        return ("an index was too slow (read timed out)",
                "retry, or use a closer mirror (--neuron-index-url / --pytorch-index-url)")
    if "do not match the hashes" in low or "hash mismatch" in low or \
            "hashes do not match" in low:
        return ("a downloaded file did not match its recorded hash (changed on the index?)",
                "re-run neuron-env install; if it persists, the index or mirror is serving "
                "altered files")
    m = re.search(r"no matching distribution found for ([^\s]+)", low)
    if m:
        return (f"no index offers {m.group(1)}",
                "check that the index (or mirror) holds it, or choose another --torch")
    if "badzipfile" in low or "bad crc" in low or "not a zip file" in low \
            or "is not a valid wheel" in low:
        return ("a wheel is corrupt (bad zip)", "re-run neuron-env install; if it persists, "
                "the index or wheelhouse serves a damaged file")
    if "resolutionimpossible" in low or "conflicting dependencies" in low:
        return ("the requirements conflict with each other or with the environment",
                "see the log; a fresh --venv DIR avoids conflicts with other packages")
    last = [ln for ln in output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return (f"the installer failed: {last[0][:300]}", "see the log for the installer's output")
