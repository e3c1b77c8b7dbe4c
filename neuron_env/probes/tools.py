"""Where the Neuron command-line tools are: on PATH, in /opt/aws/neuron/bin, in the target venv.

PATH entries are resolved under the root, so a fixture root (or a mounted image) answers for
itself; nothing is executed here.
"""

from __future__ import annotations

import os

from neuron_env.probes.host import Root
from neuron_env.util.record import factory, record

TOOLS = ("neuron-ls", "neuron-top", "neuronx-cc")
NEURON_BIN = "/opt/aws/neuron/bin"


@record
class ToolsFacts:
    on_path: dict[str, str | None] = factory(dict)  # tool -> where PATH finds it
    in_neuron_bin: dict[str, bool] = factory(dict)  # present in /opt/aws/neuron/bin
    in_venv: dict[str, str | None] = factory(dict)  # the target venv's bin/
    path: str = ""


def _executable(root: Root, directory: str, name: str) -> str | None:
    if not directory.startswith("/"):
        return None  # a relative PATH entry depends on the cwd: not a reliable answer
    f = root.file(directory.lstrip("/")) / name
    return f"{directory.rstrip('/')}/{name}" if f.is_file() and os.access(f, os.X_OK) else None


IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def image_path(root: Root) -> str:
    """A login shell's PATH in a mounted image: the default, /etc/environment's PATH, and
    /opt/aws/neuron/bin when a /etc/profile.d script adds it (as the Neuron setup guides do)."""
    dirs = IMAGE_PATH.split(":")
    for line in (root.read("etc/environment", limit=64 << 10) or "").splitlines():
        if line.strip().startswith("PATH="):
            dirs = [d for d in line.split("=", 1)[1].strip().strip('"').split(":") if d] + dirs
    try:
        scripts = sorted(root.file("etc/profile.d").glob("*.sh"))
    except OSError:
        scripts = []
    for f in scripts:
        text = root.read(str(f.relative_to(root.path)), limit=64 << 10) or ""
        if NEURON_BIN in text and "PATH" in text:
            dirs.append(NEURON_BIN)
    return ":".join(dict.fromkeys(dirs))


def probe_tools(root: Root, path_env: str | None, venv_prefix: str | None = None) -> ToolsFacts:
    dirs = [d for d in (path_env or "").split(os.pathsep) if d]
    on_path: dict[str, str | None] = {}
    in_bin: dict[str, bool] = {}
    in_venv: dict[str, str | None] = {}
    for t in TOOLS:
        on_path[t] = next((p for d in dirs if (p := _executable(root, d, t))), None)
        in_bin[t] = _executable(root, NEURON_BIN, t) is not None
        in_venv[t] = None
        if venv_prefix:  # the interpreter's own prefix: on the real host, not under the root
            f = os.path.join(venv_prefix, "bin", t)
            in_venv[t] = f if os.path.isfile(f) and os.access(f, os.X_OK) else None
    return ToolsFacts(on_path, in_bin, in_venv, path_env or "")
