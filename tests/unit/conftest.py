"""Unit tests are pure: an autouse guard fails any real subprocess or network connection
(AF_UNIX sockets stay allowed). What needs a process or a server is an integration test."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess

import pytest

from tests.helpers.guard import RealWorldTouched


def _refuse(what: str):
    def refuse(*args, **kwargs):
        raise RealWorldTouched(f"a unit test tried to {what}: move it to tests/integration "
                               f"(args: {args[:2]!r})")
    return refuse


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _local_only(real):
    def connect(self, address):
        if self.family != socket.AF_UNIX:
            raise RealWorldTouched(f"a unit test tried to connect to {address!r}: move it to "
                                   "tests/integration")
        return real(self, address)
    return connect


@pytest.fixture(scope="session", autouse=True)
def _matplotlib_font_cache():
    """matplotlib's first import on a cold font cache (a fresh MPLCONFIGDIR, a new CI runner)
    runs `fc-list` to build it: a process the guard below refuses, so the HTML tests failed on
    a first run and passed on the next. Build the cache once per session, before any guard
    (session fixtures set up before function ones); without matplotlib, nothing to do."""
    with contextlib.suppress(ImportError):
        import matplotlib.font_manager  # noqa: F401  (importing it builds the cache)


@pytest.fixture(autouse=True)
def _no_processes_no_network(monkeypatch):
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("start a process"))
    for name in ("system", "posix_spawn", "posix_spawnp", "fork", "forkpty", "execv", "execve",
                 "execvp", "execvpe"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"call os.{name}"))
    monkeypatch.setattr(socket.socket, "connect", _local_only(_real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _local_only(_real_connect_ex))
