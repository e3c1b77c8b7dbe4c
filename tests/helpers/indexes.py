"""The stand-in indexes the install and bootstrap tests share: "neuron" and "pytorch" hold the
right wheels, "public" plays PyPI with placeholders and higher, malicious versions."""

from __future__ import annotations

import base64
import dataclasses
import random
from pathlib import Path

import pytest

from tests.helpers.cli import cli_env
from tests.helpers.envs import pyenv_python
from tests.helpers.wheels import Stand, build_index

PY312 = pyenv_python("3.12")
needs312 = pytest.mark.skipif(PY312 is None, reason="no Python 3.12 (pyenv) on this machine: "
                              "the Neuron 2.34 plan needs a 3.12-3.14 target")
MALICIOUS = "raise SystemExit('MALICIOUS: taken from the public index')\n"

TORCHAO_NEURON = "0.18.0+neuron.1"  # Neuron 2.34's TorchAO Neuron: it installs the torchao module
NEURON = [  # [0] the default 2.14 family, [1] 2.13, [2] neuronx-cc, [3] nki, [4] libneuronxla
    Stand("torch-neuronx", "2.14.3.1.1", ("torch==2.14.0", "neuronx-cc==2.*", "libneuronxla==2.*")),
    Stand("torch-neuronx", "2.13.3.1.1", ("torch==2.13.0", "neuronx-cc==2.*", "libneuronxla==2.*")),
    Stand("neuronx-cc", "2.22.1.0"),
    Stand("nki", "0.3.0"),
    Stand("libneuronxla", "2.2.0"),
    # Neuron 2.33's builds (--matrix 2.33) and 2.34's TorchAO Neuron (install --with)
    Stand("torch-neuronx", "2.14.3.0.1", ("torch==2.14.0", "neuronx-cc==2.*", "libneuronxla==2.*")),
    Stand("torch-neuronx", "2.13.3.0.1", ("torch==2.13.0", "neuronx-cc==2.*", "libneuronxla==2.*")),
    Stand("torchao-neuron", TORCHAO_NEURON, ("torch==2.14.0",),
          extra_files={"torchao/__init__.py": "__version__ = '0.18.0+neuron.1'\n"}),
]
PYTORCH = [Stand("torch", "2.14.0+cpu", ("filelock",)), Stand("torch", "2.13.0+cpu", ("filelock",)),
           Stand("torchvision", "0.28.0+cpu", ("torch==2.13.0",)),
           Stand("torchvision", "0.29.0+cpu", ("torch==2.14.0",))]
PUBLIC = [
    Stand("torch-neuronx", "2.14.3.0.99", body=MALICIOUS),  # dependency confusion
    Stand("torch-neuronx", "2.14.3.1.99", body=MALICIOUS),
    Stand("torchao-neuron", "0.18.0", body=MALICIOUS),  # the Neuron name, on the public index
    Stand("torch-neuronx", "1.0", body='raise ImportError("WRONG PACKAGE")\n'),
    Stand("nki", "9.9.9", body=MALICIOUS),
    Stand("nki", "0.0.1"),
    Stand("libneuronxla", "2.99.0", body=MALICIOUS),
    Stand("neuronx-cc", "2.99.0", body=MALICIOUS),
    Stand("filelock", "3.0.0"),
    Stand("torch", "2.14.0", ("filelock",), body=MALICIOUS),  # PyPI's CUDA build, say
    Stand("torchvision", "0.28.1", ("torch==2.13.0",), body=MALICIOUS),  # PyPI's CUDA build
]


def pip_env(idx, **extra) -> dict:
    """The CLI's environment, with pip cut off from this machine's configuration."""
    empty = Path(idx["root"]) / "empty-pip.conf"
    empty.write_text("")
    env = {k: v for k, v in cli_env().items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=str(empty), PIP_INDEX_URL=idx["public"], PIP_NO_CACHE_DIR="1",
               UV_NO_CACHE="1", UV_INDEX_URL=idx["public"],
               NEURON_ENV_NEURON_INDEX_URL=idx["neuron"],
               NEURON_ENV_PYTORCH_INDEX_URL=idx["pytorch"])
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def build_indexes(root: Path) -> dict:
    out = {}
    for name, stands in (("neuron", NEURON), ("pytorch", PYTORCH), ("public", PUBLIC)):
        out[name] = build_index(root / name, stands, hashes=name != "neuron")
    return {**{k: v.as_uri() for k, v in out.items()}, "root": root}


BLOB = 1_200_000  # bytes: pip shows download progress only for files over 512 kB


def big(stand: Stand, size: int = BLOB) -> Stand:
    """The stand carrying `size` bytes of incompressible data (stored uncompressed)."""
    data = random.Random(stand.name).randbytes(size * 3 // 4)
    mod = stand.name.replace("-", "_").lower()
    return dataclasses.replace(stand, extra_files={f"{mod}/blob.txt": base64.b64encode(
        data).decode()})


def build_download_indexes(root: Path) -> dict:
    """build_indexes, plus root/"public-big" to serve over HTTP (IndexServer): a public index
    whose `filelock` (torch's dependency) weighs BLOB bytes, without the hostile libneuronxla
    (so the plan resolves in one round: pip downloads filelock once to resolve, once to
    install)."""
    out = build_indexes(root)
    public = [big(s) if s.name == "filelock" else s for s in PUBLIC if s.name != "libneuronxla"]
    build_index(root / "public-big", public, hashes=True)
    return {**out, "public_big": root / "public-big"}
