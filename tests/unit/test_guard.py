"""The unit-test guard (tests/unit/conftest.py) really refuses processes and the network."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from neuron_env.guards import proc
from tests.helpers.guard import RealWorldTouched


def test_subprocess_is_refused():
    with pytest.raises(RealWorldTouched):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_the_funnel_is_refused():
    with pytest.raises(RealWorldTouched):
        proc.run([sys.executable, "-c", "pass"], timeout=5)


def test_os_system_and_spawn_are_refused():
    with pytest.raises(RealWorldTouched):
        os.system("true")
    with pytest.raises(RealWorldTouched):
        os.posix_spawn("/bin/true", ["true"], {})


def test_network_is_refused_but_unix_sockets_pass():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(RealWorldTouched):
        s.connect(("127.0.0.1", 9))
    a, b = socket.socketpair(socket.AF_UNIX)
    a.close()
    b.close()
