"""The unit tests' guard (tests/unit/conftest.py): a unit test that connects or binds a
socket, or starts a process, is stopped with a message that says where the test belongs, and
fails even when the code under test swallows the error."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess

import pytest

MOVE = "move this test to tests/integration"


def test_sockets_and_processes_are_refused_and_the_attempts_are_counted(refused):
    with pytest.raises(AssertionError, match=MOVE), socket.socket() as client:
        client.connect(("127.0.0.1", 9))
    with pytest.raises(AssertionError, match=MOVE), socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
    with pytest.raises(AssertionError, match=MOVE):
        socket.create_connection(("example.com", 443), timeout=1)
    with pytest.raises(AssertionError, match=MOVE):
        subprocess.run(["true"], check=False)
    with pytest.raises(AssertionError, match=MOVE):
        os.system("true")
    with contextlib.suppress(Exception):  # code that swallows the error hides no attempt
        subprocess.run(["true"], check=False)
    process = "starting a process (subprocess.Popen)"
    assert refused == ["socket.connect", "socket.bind", "socket.getaddrinfo", process,
                       "os.system", process]
    refused.clear()  # the guard's own check at teardown: this test broke no rule on purpose
