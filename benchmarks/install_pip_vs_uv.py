"""pip vs uv for the same install plan from a local index, and the no-op re-run, side by side
(run by hand, not in CI).

    python benchmarks/install_pip_vs_uv.py [--runs 3] [--python python3.12] [--http]
    python benchmarks/install_pip_vs_uv.py --real-torch [--find-links /opt/wheels]

Builds stand-in wheels (torch, torch-neuronx, neuronx-cc, nki, libneuronxla, filelock) into
three PEP 503 indexes (neuron, pytorch, a "public" one with decoys), then for each installer
installs into fresh venvs and re-runs once. --http serves the indexes over 127.0.0.1.

--real-torch: the real torch==2.13.0 CPU wheel (the one this machine's pip configuration finds
on disk) into fresh venvs of THIS interpreter with pip, uv without bytecode (how neuron-env's
uv installs ran before) and uv --compile-bytecode (how they run now), then the first
`import torch` and a second one under PYTHONDONTWRITEBYTECODE=1 (what a machine that sets it
pays on every import).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.helpers.envs import make_venv, pyenv_python  # noqa: E402
from tests.helpers.indexes import NEURON, PUBLIC, PYTORCH  # noqa: E402
from tests.helpers.roots import trn2_host  # noqa: E402
from tests.helpers.wheels import IndexServer, build_index  # noqa: E402


def run(argv, env) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{r.stdout}\n{r.stderr}")
    return time.perf_counter() - t0


IMPORT = ["-c", "import time; t = time.perf_counter(); import torch; "
          "print(time.perf_counter() - t)"]


def uv_sources() -> list[str]:
    """pip's configuration (find-links, indexes) as uv flags: uv does not read pip.conf."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                         text=True, timeout=60).stdout
    args = []
    for line in out.splitlines():
        key, _, val = line.partition("=")
        val = val.strip("'\"")
        if key.endswith("find-links"):
            args += [x for v in val.split() for x in ("--find-links", v)]
        elif key.endswith("extra-index-url"):
            args += [x for v in val.split() for x in ("--extra-index-url", v)]
        elif key.endswith("constraint"):
            args += ["--constraint", val]
    return args


def real_torch(tmp: Path) -> None:
    from neuron_env.install.installers import find_uv

    uv = find_uv()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    ways = {"pip": lambda py: [str(py), "-m", "pip", "install", "-q", "torch==2.13.0"]}
    if uv:
        src = uv_sources()
        ways["uv (no bytecode)"] = lambda py: [uv, "pip", "install", "-q", "--python", str(py),
                                               *src, "torch==2.13.0"]
        ways["uv --compile-bytecode"] = lambda py: [uv, "pip", "install", "-q", "--python",
                                                    str(py), "--compile-bytecode", *src,
                                                    "torch==2.13.0"]
    print(f"{'installer':<24}{'install s':>10}{'1st import torch s':>20}"
          f"{'next, no .pyc writes s':>24}")
    for i, (name, cmd) in enumerate(ways.items()):
        py = tmp / f"t{i}" / "bin" / "python"
        subprocess.run([sys.executable, "-m", "venv", str(py.parent.parent)], check=True,
                       timeout=300)
        inst = run(cmd(py), dict(env, UV_NO_CACHE="1", PIP_NO_CACHE_DIR="1"))
        first = float(subprocess.run([str(py), *IMPORT], capture_output=True, text=True,
                                     env=env, timeout=600, check=True).stdout)
        nowrite = dict(env, PYTHONDONTWRITEBYTECODE="1")
        again = float(subprocess.run([str(py), *IMPORT], capture_output=True, text=True,
                                     env=nowrite, timeout=600, check=True).stdout)
        print(f"{name:<24}{inst:>10.1f}{first:>20.2f}{again:>24.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default=pyenv_python("3.12") or "python3.12")
    ap.add_argument("--http", action="store_true")
    ap.add_argument("--real-torch", action="store_true", help="the real torch wheel instead")
    a = ap.parse_args()
    if a.real_torch:
        with tempfile.TemporaryDirectory() as tmp:
            real_torch(Path(tmp))
        return
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        t = Path(tmp)
        urls = {}
        for name, stands in (("neuron", NEURON), ("pytorch", PYTORCH), ("public", PUBLIC)):
            build_index(t / name, stands)
            urls[name] = (stack.enter_context(IndexServer(t / name)).url if a.http
                          else (t / name / "simple").as_uri())
        root = trn2_host(t / "root")
        (t / "empty.conf").write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
        env.update(PIP_CONFIG_FILE=str(t / "empty.conf"), PIP_INDEX_URL=urls["public"],
                   NEURON_ENV_NEURON_INDEX_URL=urls["neuron"],
                   NEURON_ENV_PYTORCH_INDEX_URL=urls["pytorch"], AWS_EC2_METADATA_DISABLED="1")
        cli = [sys.executable, "-m", "neuron_env", "install", "--yes", "--quiet",
               "--root", str(root)]
        rows = []
        for inst in ("pip", "uv"):
            first, again = [], []
            for i in range(a.runs):
                py = make_venv(t / f"{inst}{i}", a.python)
                first.append(run([*cli, "--python", str(py), "--installer", inst], env))
                again.append(run([*cli, "--python", str(py), "--installer", inst], env))
            rows.append((inst, statistics.median(first), statistics.median(again)))
        print(f"index: {'http 127.0.0.1' if a.http else 'file://'}; target {a.python}; "
              f"medians of {a.runs}")
        print(f"{'installer':<10} {'install':>9} {'no-op re-run':>13}")
        for inst, f, g in rows:
            print(f"{inst:<10} {f:>8.2f}s {g:>12.2f}s")


if __name__ == "__main__":
    main()
