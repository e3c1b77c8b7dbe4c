"""An offline wheelhouse holding neuron-env itself and its dependencies, as an air-gapped AMI
build would carry: neuron-env's wheel is built from this checkout (hatchling, no isolation, no
network), and each dependency is re-packed as a wheel from the files installed here (all are
pure Python), so `pip install --no-index --find-links DIR neuron-env` works with no index."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.helpers.cli import REPO

SKIP = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def repack(dist: metadata.Distribution, out: Path) -> Path:
    """A wheel of an installed pure-Python distribution, from its RECORDed files."""
    info = next(f for f in dist.files if f.parts[0].endswith(".dist-info"))
    info_dir = info.parts[0]
    wheel_meta = (Path(dist.locate_file(info_dir)) / "WHEEL").read_text()
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines()
            if line.startswith("Tag:")]
    if not tags or not all(t.endswith("-none-any") for t in tags):
        raise RuntimeError(f"{dist.metadata['Name']} is not pure Python ({tags}): cannot repack")
    name = dist.metadata["Name"].replace("-", "_")
    pythons = ".".join(dict.fromkeys(t.split("-")[0] for t in tags))  # py2.py3
    path = out / f"{name}-{dist.version}-{pythons}-none-any.whl"
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in dist.files:
            rel = str(f)
            if rel.startswith("..") or "__pycache__" in f.parts or f.suffix == ".pyc" or \
                    (f.parts[0] == info_dir and f.name in SKIP):
                continue
            data = Path(dist.locate_file(f)).read_bytes()
            z.writestr(rel, data)
            records.append(_record_line(rel, data))
        records.append(f"{info_dir}/RECORD,,")
        z.writestr(f"{info_dir}/RECORD", "\n".join(records) + "\n")
    return path


def _closure(names: list[str]) -> list[metadata.Distribution]:
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        req = Requirement(todo.pop())
        key = req.name.lower().replace("_", "-")
        if key in seen:
            continue
        dist = metadata.distribution(req.name)
        seen[key] = dist
        for r in dist.requires or []:
            rr = Requirement(r)
            if rr.marker is None or rr.marker.evaluate({"extra": ""}):
                todo.append(str(rr.name))
    return list(seen.values())


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--no-index", "-q", "-w", str(out), str(REPO)], capture_output=True,
                       text=True, timeout=180,
                       env={**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
                            "PIP_CONFIG_FILE": os.devnull})  # this machine's pip config: none
    if p.returncode != 0:
        raise RuntimeError(f"building neuron-env's wheel failed:\n{p.stderr[-2000:]}")
    deps = [r for r in (metadata.distribution("neuron-env").requires or [])
            if "extra ==" not in r]
    for dist in _closure([Requirement(r).name for r in deps
                          if Requirement(r).marker is None
                          or Requirement(r).marker.evaluate({"extra": ""})]):
        repack(dist, out)
    return out


def offline_pip_env(out: Path, build_backend: tuple[str, ...] = ("hatchling",)) -> dict[str, str]:
    """An environment in which pip installs neuron-env FROM SOURCE with no index: its
    dependencies and its build backend (for build isolation) re-packed from this venv into
    `out`; this machine's pip configuration is left out."""
    out.mkdir(parents=True, exist_ok=True)
    deps = [Requirement(r) for r in (metadata.distribution("neuron-env").requires or [])
            if "extra ==" not in r]
    names = [r.name for r in deps if r.marker is None or r.marker.evaluate({"extra": ""})]
    for dist in _closure(names + list(build_backend)):
        repack(dist, out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(out), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def snapshot(out: Path) -> Path:
    """A git repository holding one commit of this working tree's project files (tracked and
    untracked-but-not-ignored; no tests or benchmarks): what an installer of a checkout sees."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True, timeout=60).stdout
    for rel in files.splitlines():
        src = REPO / rel
        if src.is_file() and not rel.startswith(("tests/", "benchmarks/")):
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / rel)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run([*git, *args], cwd=out, check=True, capture_output=True, timeout=60)
    return out
