"""Shared fixtures. Every test runs with IMDS disabled unless it starts its own, and any attempt
to reach a non-loopback address fails loudly (tests never touch the network)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import sys
import tempfile

import pytest

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _loopback(address) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX
        return True
    host = address[0]
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded(real):
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            raise AssertionError(f"test tried to reach the network: {address!r}")
        return real(self, address)
    return connect


def pytest_configure(config):
    """neuron-env's own cache (matrix/cache.py) in a temporary directory, never in ~, from
    collection on (test modules load matrices at import)."""
    os.environ["NEURON_ENV_CACHE_DIR"] = tempfile.mkdtemp(prefix="ne-test-cache-")
    # the user's matrix directory (matrix update): an empty one, never ~/.local/share's
    os.environ["NEURON_ENV_MATRIX_DIR"] = os.path.join(os.environ["NEURON_ENV_CACHE_DIR"],
                                                       "user-matrices")


def pytest_unconfigure(config):
    shutil.rmtree(os.environ.pop("NEURON_ENV_CACHE_DIR", ""), ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    monkeypatch.setattr(socket.socket, "connect", _guarded(_real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded(_real_connect_ex))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", raising=False)
    for var in ("NEURON_ENV_MATRIX", "NEURON_ENV_PYTHON", "VIRTUAL_ENV", "NO_COLOR",
                "NEURON_ENV_NEURON_INDEX_URL", "NEURON_ENV_PYTORCH_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def base_venv(tmp_path_factory):
    """A bare venv of this interpreter (3.11); tests copy-free: they add dists to their own."""
    from tests.helpers.envs import make_venv

    return make_venv(tmp_path_factory.mktemp("venv") / "v")


@pytest.fixture
def venv_factory(tmp_path):
    """Make real venvs (without pip: fast) for a given interpreter."""
    from tests.helpers.envs import make_venv, site_packages

    made = []

    def make(python: str = sys.executable, name: str | None = None):
        py = make_venv(tmp_path / (name or f"venv{len(made)}"), python)
        made.append(py)
        return py, site_packages(py)

    return make
