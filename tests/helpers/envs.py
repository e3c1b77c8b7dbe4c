"""Target environments: real venvs (no pip, fast) with metadata-only distributions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def pyenv_python(version: str) -> str | None:
    """A pyenv interpreter such as '3.12' -> /root/.pyenv/versions/3.12.1/bin/python3.12."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if not root.is_dir():
        return None
    for d in sorted(root.iterdir(), reverse=True):
        if d.name == version or d.name.startswith(version + "."):
            exe = d / "bin" / f"python{version}"
            if exe.exists():
                return str(exe)
    found = shutil.which(f"python{version}")
    if found:
        r = subprocess.run([found, "-c", "import sys"], capture_output=True, timeout=20)
        if r.returncode == 0:
            return found
    return None


def make_venv(path: Path, python: str = sys.executable) -> Path:
    subprocess.run([python, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def site_packages(venv_python: Path) -> Path:
    out = subprocess.run([str(venv_python), "-c", "import sysconfig;print(sysconfig.get_paths()"
                          "['purelib'])"], capture_output=True, text=True, check=True, timeout=30)
    return Path(out.stdout.strip())


def add_dist(site: Path, name: str, version: str, *, installer: str = "pip",
             direct_url: dict | None = None, files: dict[str, str] | None = None,
             metadata: str | None = None) -> Path:
    """A distribution that importlib.metadata sees exactly as pip would leave it."""
    norm = name.replace("-", "_")
    d = site / f"{norm}-{version}.dist-info"
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(metadata if metadata is not None else
                                f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (d / "INSTALLER").write_text(installer + "\n")
    if direct_url:
        (d / "direct_url.json").write_text(json.dumps(direct_url))
    for rel, text in (files or {}).items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (d / "RECORD").write_text("")
    return d


def remove_dist(site: Path, name: str) -> None:
    norm = name.replace("-", "_")
    for d in site.glob(f"{norm}-*.dist-info"):
        shutil.rmtree(d)


GOOD_214 = {"torch": "2.14.0+cpu", "torch-neuronx": "2.14.3.0.1711", "neuronx-cc": "2.28.7.0",
            "nki": "0.7.0"}
# the 2.14 pair of Neuron 2.34 (the default matrix); GOOD_214 above is Neuron 2.33's build
GOOD_234 = {**GOOD_214, "torch-neuronx": "2.14.3.1.1802"}
PLACEHOLDER_INIT = ('raise ImportError("WRONG PACKAGE. Please install the package from Neuron '
                    'Repository - pip.repos.neuron.amazonaws.com")\n')
