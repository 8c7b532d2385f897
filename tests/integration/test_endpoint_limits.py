"""The loop's HTTP endpoint cannot be exhausted without a signature: lengths are checked
before a byte is read, half-sent requests time out, connections beyond the cap are refused;
and a request that could be read two ways is refused by the parser, never guessed at (each
case over a raw socket)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import socket
import threading
import time

import pytest

from gitgate.endpoints.connection import Limits
from gitgate.endpoints.routes import LoopEndpoints
from gitgate.endpoints.server import EndpointServer

pytestmark = pytest.mark.integration
LIMITS = Limits()
SECRET = b"s"


def serving(limits: Limits):
    triggered = []
    endpoints = LoopEndpoints(ready=lambda: True, status=lambda: {}, metrics=lambda: b"",
                              trigger=lambda: triggered.append(1), webhook_secret=SECRET)
    running = EndpointServer(("127.0.0.1", 0), endpoints, limits).start()
    yield running, triggered
    running.stop()


@pytest.fixture
def server():
    yield from serving(LIMITS)


@pytest.fixture
def hasty():
    """A server whose requests must arrive whole within a second."""
    yield from serving(Limits(request_deadline=1.0))


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


def test_a_half_sent_request_is_dropped(hasty):
    running, _ = hasty
    started = time.monotonic()
    answer = raw(running.port, b"POST /hooks/git HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc",
                 timeout=10)
    assert time.monotonic() - started < 8 and b"202" not in answer


def test_the_deadline_bounds_the_whole_request_however_slowly_it_trickles(hasty):
    """One byte every 0.3 s never lets a per-read timeout of 1 s expire; the request's own
    deadline still ends it (issue 24: the 10 s must bound the whole request)."""
    running, _ = hasty
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
            assert raw(running.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n"
                       b"Connection: close\r\n\r\n").startswith(
                b"HTTP/1.1 200")
            assert time.monotonic() - started < 2
    finally:
        for conn in idle:
            conn.close()


def test_one_client_cannot_hold_more_than_its_share(server):
    running, _ = server
    idle = []
    try:
        for _ in range(LIMITS.per_client):
            conn = socket.create_connection(("127.0.0.1", running.port))
            conn.sendall(b"GET /status HTTP/1.1\r\n")  # never finished
            idle.append(conn)
        time.sleep(0.3)
        assert raw(running.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                   b"Connection: close\r\n\r\n").startswith(b"HTTP/1.1 503")
    finally:
        for conn in idle:
            conn.close()
    time.sleep(0.3)
    assert b"200" in raw(running.port, b"GET /healthz HTTP/1.0\r\n\r\n")


def signed(body: bytes) -> bytes:
    return b"sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest().encode()


def status_of(answer: bytes) -> bytes:
    return answer.split(b" ")[1] if answer.startswith(b"HTTP/1.1 ") else answer[:40]


BODY = b'{"ref": "refs/heads/main"}'
HOOK = b"POST /hooks/git HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize("request_bytes", [
    pytest.param(b"POST /reconcile HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer s\r\n"
                 b"Content-Length: 0\r\n\r\n", id="space-before-colon"),
    pytest.param(HOOK + b"X-Note: a\r\n X-Hub-Signature-256: " + signed(BODY)
                 + b"\r\nContent-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY,
                 id="obs-fold"),
    pytest.param(HOOK + b"X-Hub-Signature-256: " + signed(BODY) + b"\r\nContent-Length: 3"
                 b"\r\nContent-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY,
                 id="two-content-lengths"),
    pytest.param(HOOK + b"X-Hub-Signature-256: " + signed(BODY) + b"\r\nContent-Length: "
                 + str(len(BODY)).encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n",
                 id="length-beside-chunked"),
    pytest.param(HOOK + b"X-Hub-Signature-256: " + signed(BODY) + b"\nContent-Length: "
                 + str(len(BODY)).encode() + b"\r\n\r\n" + BODY, id="bare-lf"),
])
def test_a_request_that_reads_two_ways_is_refused_by_the_parser(server, request_bytes):
    running, triggered = server
    assert status_of(raw(running.port, request_bytes)) == b"400"
    assert triggered == []


def test_a_chunked_body_is_read_whole(server):
    running, triggered = server
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (BODY[:5], BODY[5:]))
    answer = raw(running.port, HOOK + b"X-Hub-Signature-256: " + signed(BODY)
                 + b"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                 + chunked + b"0\r\n\r\n")
    assert status_of(answer) == b"202" and triggered == [1]


def test_a_chunked_body_past_the_limit_is_refused(server):
    running, triggered = server
    chunk = b"x" * 65536
    with socket.create_connection(("127.0.0.1", running.port), timeout=5) as conn:
        conn.sendall(HOOK + b"X-Hub-Signature-256: sha256=00\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        with contextlib.suppress(OSError):
            for _ in range(LIMITS.body_bytes // len(chunk) + 1):
                conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = conn.recv(65536)
    assert status_of(answer) == b"413" and triggered == []


def test_two_signatures_are_refused_even_when_one_is_right(server):
    running, triggered = server
    for first, second in ((signed(BODY), b"sha256=" + b"0" * 64),
                          (b"sha256=" + b"0" * 64, signed(BODY))):
        answer = raw(running.port, HOOK + b"X-Hub-Signature-256: " + first
                     + b"\r\nX-Hub-Signature-256: " + second + b"\r\nContent-Length: "
                     + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
        assert status_of(answer) == b"400", answer
    assert triggered == []
    assert status_of(raw(running.port, HOOK + b"X-Hub-Signature-256: " + signed(BODY)
                         + b"\r\nContent-Length: " + str(len(BODY)).encode()
                         + b"\r\nConnection: close\r\n\r\n" + BODY)) == b"202"


def test_two_authorizations_are_refused(server):
    running, _ = server
    answer = raw(running.port, b"POST /reconcile HTTP/1.1\r\nHost: x\r\nAuthorization: "
                 b"Bearer s\r\nAuthorization: Bearer guess\r\nContent-Length: 0\r\n\r\n")
    assert status_of(answer) == b"400"


def test_too_many_or_too_large_headers_are_refused(server):
    running, _ = server
    many = b"".join(b"X-Field-%d: y\r\n" % n for n in range(150))
    assert status_of(raw(running.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many
                         + b"\r\n")) == b"431"
    large = b"X-Large: " + b"y" * (LIMITS.header_bytes + 1) + b"\r\n"
    assert status_of(raw(running.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + large
                         + b"\r\n")) == b"431"
    assert status_of(raw(running.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                         b"Connection: close\r\n\r\n")) == b"200"


def test_stop_leaves_no_thread_and_closes_what_is_connected():
    before = set(threading.enumerate())
    running, _ = next(generator := serving(LIMITS))
    idle = socket.create_connection(("127.0.0.1", running.port))
    idle.sendall(b"GET /status HTTP/1.1\r\n")  # never finished
    assert raw(running.port, b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close"
                             b"\r\n\r\n").startswith(b"HTTP/1.1 200")  # a worker thread
    started = time.monotonic()
    with contextlib.suppress(StopIteration):
        next(generator)
    assert time.monotonic() - started < 5
    idle.settimeout(5)
    assert idle.recv(1024) == b""  # closed by the server
    idle.close()
    until_gone = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < until_gone:
        time.sleep(0.05)
    assert set(threading.enumerate()) - before == set()


def test_pipelined_requests_are_answered_in_order(server):
    running, _ = server
    answer = raw(running.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                               b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.count(b"HTTP/1.1 200") == 2 and answer.index(b"ok\n") < answer.index(
        b"ready\n")
