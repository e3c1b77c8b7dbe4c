"""pip vs uv for the same install plan from a local index, and the no-op re-run, side by side
(run by hand, not in CI).

    python benchmarks/install_pip_vs_uv.py [--runs 3] [--python python3.12] [--http]

Builds stand-in wheels (torch, torch-neuronx, neuronx-cc, nki, libneuronxla, filelock) into
three PEP 503 indexes (neuron, pytorch, a "public" one with decoys), then for each installer
installs into fresh venvs and re-runs once. --http serves the indexes over 127.0.0.1.
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
from tests.helpers.roots import trn2_host  # noqa: E402
from tests.helpers.wheels import IndexServer, build_index  # noqa: E402
from tests.integration.test_install import NEURON, PUBLIC, PYTORCH  # noqa: E402


def run(argv, env) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{r.stdout}\n{r.stderr}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default=pyenv_python("3.12") or "python3.12")
    ap.add_argument("--http", action="store_true")
    a = ap.parse_args()
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
