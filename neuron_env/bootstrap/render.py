"""Render the user-data bootstrap and the EC2 Image Builder component from their templates."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from neuron_env import __version__
from neuron_env.errors import UsageError

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class BootstrapOptions:
    source: str = f"neuron-env=={__version__}"  # pip spec, wheel URL or wheelhouse directory
    tool_venv: str = "/opt/neuron-env"
    venv: str = "/opt/neuron-venv"
    torch: str = ""
    backend: str = "neuron"
    python: str = "python3"
    log_dir: str = "/var/log/neuron-env"
    state_dir: str = "/var/lib/neuron-env"
    smoke: bool = True
    retries: int = 5
    doctor_args: str = ""
    install_args: str = ""
    neuron_index_url: str | None = None
    pytorch_index_url: str | None = None
    instance_type: str | None = None  # image builder: the type the image targets


def _check(o: BootstrapOptions) -> None:
    if o.backend not in ("neuron", "emulated"):
        raise UsageError(f"--backend {o.backend!r} is not neuron or emulated",
                         hint="use --backend neuron or --backend emulated")
    if o.torch and o.torch not in ("2.13", "2.14"):
        raise UsageError(f"--torch {o.torch!r}: use 2.14 or 2.13", hint="or leave it out")
    if o.retries < 1 or o.retries > 20:
        raise UsageError("--retries must be 1..20", hint="e.g. --retries 5")
    for name, v in (("--venv", o.venv), ("--tool-venv", o.tool_venv), ("--log-dir", o.log_dir),
                    ("--state-dir", o.state_dir)):
        if not v.startswith("/"):
            raise UsageError(f"{name} {v!r} must be an absolute path", hint="e.g. /opt/venv")


def _sh(v: str) -> str:
    """A value safe inside "${VAR:-...}" (double quotes): no $, `, \\, " or newline."""
    if any(c in v for c in '$`\\"\n'):
        raise UsageError(f"{v!r} contains a character that cannot go in the script ($ ` \\ \" "
                         "or a newline)", hint="pass it through the environment instead")
    return v


def _fill(template: str, subs: dict[str, str]) -> str:
    text = (TEMPLATES / template).read_text()
    for k, v in subs.items():
        text = text.replace(f"@@{k}@@", v)
    return text


def userdata(o: BootstrapOptions) -> str:
    _check(o)
    exports = []
    for var, v in (("NEURON_ENV_NEURON_INDEX_URL", o.neuron_index_url),
                   ("NEURON_ENV_PYTORCH_INDEX_URL", o.pytorch_index_url)):
        if v:
            exports.append(f'export {var}="${{{var}:-{_sh(v)}}}"')
    subs = {"SOURCE": o.source, "TOOL_VENV": o.tool_venv, "TARGET_VENV": o.venv,
            "TORCH": o.torch, "BACKEND": o.backend, "PYTHON": o.python, "LOG_DIR": o.log_dir,
            "STATE_DIR": o.state_dir, "SMOKE": "1" if o.smoke else "0",
            "RETRIES": str(o.retries), "DOCTOR_ARGS": o.doctor_args,
            "INSTALL_ARGS": o.install_args}
    text = _fill("user-data.sh", {k: _sh(v) for k, v in subs.items()})
    return text.replace("@@INDEX_EXPORTS@@\n", "".join(e + "\n" for e in exports))


def component(o: BootstrapOptions) -> str:
    """The EC2 Image Builder component: build installs, validate runs doctor (assuming the
    target instance type: the build instance is often another), test runs doctor --smoke."""
    _check(o)
    q = shlex.quote
    env = "".join(f"export {k}={q(v)}\n              " for k, v in (
        ("NEURON_ENV_NEURON_INDEX_URL", o.neuron_index_url),
        ("NEURON_ENV_PYTORCH_INDEX_URL", o.pytorch_index_url)) if v)
    src = (f"--no-index --find-links {q(o.source)} neuron-env" if o.source.startswith("/")
           else q(o.source))
    torch = f" --torch {q(o.torch)}" if o.torch else ""
    assume = f" --instance-type {q(o.instance_type)}" if o.instance_type else ""
    ne = f"{o.tool_venv}/bin/neuron-env"
    py = f"{o.venv}/bin/python"
    subs = {"VERSION": __version__, "ENV": env, "PYTHON": q(o.python),
            "TOOL_VENV": q(o.tool_venv), "SOURCE": src, "NE": q(ne), "VENV": q(o.venv),
            "BACKEND": q(o.backend), "TORCH": torch, "TARGET_PY": q(py), "ASSUME": assume,
            "LOG_DIR": q(o.log_dir)}
    return _fill("imagebuilder.yaml", subs)
