"""Unit tests touch no socket and start no process: a test that connects, binds or sends on
a socket, looks a name up, or starts a process (subprocess, fork, spawn, exec), fails saying
so, even when the code under test catches the error. Such a test belongs in
tests/integration, where the real tools and the API emulator are in reach."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

# Libraries that probe on import, once per process (GitPython runs `git version`, urllib3
# binds a socket to ::1 to learn whether IPv6 works, croniter runs `file` on the interpreter
# to learn its word size): imported here, before any test.
import croniter  # noqa: F401
import git  # noqa: F401
import pytest
import urllib3  # noqa: F401

WHERE = "tests/unit touches no socket and starts no process: move this test to tests/integration"
SOCKET_CALLS = ("connect", "connect_ex", "bind", "sendto")
NAME_LOOKUPS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr")
PROCESS_CALLS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "spawnv", "spawnve",
                 "execv", "execve", "system")


def refusing(what: str, tried: list[str]) -> Callable[..., NoReturn]:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        tried.append(what)
        raise AssertionError(f"{what} in a unit test; {WHERE}")
    return refuse


@pytest.fixture
def refused() -> list[str]:
    """What the test tried that a unit test may not (the guard's own test reads and clears it)."""
    return []


@pytest.fixture(autouse=True)
def no_socket_no_process(monkeypatch: pytest.MonkeyPatch, refused: list[str]) -> Iterator[None]:
    tried = refused
    for name in SOCKET_CALLS:
        monkeypatch.setattr(socket.socket, name, refusing(f"socket.{name}", tried))
    for name in NAME_LOOKUPS:
        monkeypatch.setattr(socket, name, refusing(f"socket.{name}", tried))
    monkeypatch.setattr(subprocess.Popen, "_execute_child",
                        refusing("starting a process (subprocess.Popen)", tried))
    for name in PROCESS_CALLS:
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refusing(f"os.{name}", tried))
    yield
    assert not tried, f"{', '.join(sorted(set(tried)))} in a unit test; {WHERE}"
