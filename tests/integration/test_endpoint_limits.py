"""The loop's HTTP endpoint cannot be exhausted without a signature: lengths are checked
before a byte is read, half-sent requests time out, connections beyond the cap are refused."""

from __future__ import annotations

import contextlib
import socket
import time

import pytest

from gitgate import httpserver
from gitgate.httpserver import EndpointServer, LoopEndpoints

pytestmark = pytest.mark.integration


@pytest.fixture
def server():
    triggered = []
    endpoints = LoopEndpoints(ready=lambda: True, status=lambda: {}, metrics=lambda: b"",
                              trigger=lambda: triggered.append(1), webhook_secret=b"s")
    running = EndpointServer(("127.0.0.1", 0), endpoints).start()
    yield running, triggered
    running.stop()


def raw(port: int, data: bytes, timeout: float = 5) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


@pytest.mark.parametrize("length, status", [(b"-5", b"400"), (b"abc", b"400"),
                                            (b"999999999999", b"413")])
def test_bad_lengths_are_refused_before_reading(server, length, status):
    running, triggered = server
    answer = raw(running.port, b"POST /hooks/git HTTP/1.1\r\nHost: x\r\nContent-Length: "
                 + length + b"\r\n\r\n")
    assert answer.split(b" ")[1] == status and triggered == []


def test_a_half_sent_request_is_dropped(server, monkeypatch):
    running, _ = server
    monkeypatch.setattr(httpserver, "REQUEST_DEADLINE", 1.0)
    started = time.monotonic()
    answer = raw(running.port, b"POST /hooks/git HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc",
                 timeout=10)
    assert time.monotonic() - started < 8 and b"202" not in answer


def test_the_deadline_bounds_the_whole_request_however_slowly_it_trickles(server,
                                                                          monkeypatch):
    """One byte every 0.3 s never lets a per-read timeout of 1 s expire; the request's own
    deadline still ends it (issue 24: the 10 s must bound the whole request)."""
    running, _ = server
    monkeypatch.setattr(httpserver, "REQUEST_DEADLINE", 1.0)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", running.port), timeout=10) as conn:
        answer = b""
        for byte in b"GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Slow: " + b"y" * 40:
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.3)
            conn.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                answer += conn.recv(1024)
            conn.setblocking(True)
            if answer:
                break
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert time.monotonic() - started < 5


def test_health_is_answered_while_slow_clients_hold_connections(server):
    """40 connections that never finish their request (slowloris) leave /healthz and
    /readyz answering at once."""
    running, _ = server
    idle = []
    try:
        for _ in range(40):
            conn = socket.create_connection(("127.0.0.1", running.port))
            conn.sendall(b"GET /healthz HTTP/1.1\r\n")  # never finished
            idle.append(conn)
        time.sleep(0.3)
        for path in (b"/healthz", b"/readyz"):
            started = time.monotonic()
            assert raw(running.port, b"GET " + path + b" HTTP/1.1\r\n\r\n").startswith(
                b"HTTP/1.1 200")
            assert time.monotonic() - started < 2
    finally:
        for conn in idle:
            conn.close()


def test_one_client_cannot_hold_more_than_its_share(server):
    running, _ = server
    idle = []
    try:
        for _ in range(httpserver.PER_CLIENT):
            conn = socket.create_connection(("127.0.0.1", running.port))
            conn.sendall(b"GET /status HTTP/1.1\r\n")  # never finished
            idle.append(conn)
        time.sleep(0.3)
        assert raw(running.port, b"GET /healthz HTTP/1.1\r\n\r\n").startswith(
            b"HTTP/1.1 503")
    finally:
        for conn in idle:
            conn.close()
    time.sleep(0.3)
    assert b"200" in raw(running.port, b"GET /healthz HTTP/1.0\r\n\r\n")
