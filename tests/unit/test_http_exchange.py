"""What goes out on a kept-alive connection and how its answer is read (`apiserver.connections`):
the request's exact bytes, and answers as a server may frame them, split, cut short or
garbled. Each answer is written into one end of a socket pair before the request is sent on
the other, so nothing here waits on the network or on time."""

from __future__ import annotations

import http.client
import socket

import pytest

from gitgate.apiserver import connections
from gitgate.apiserver.connections import Connections, MalformedAnswer

TIMEOUTS = (1.0, 1.0)


def pool_with_answer(answer: bytes, *, close_after: bool = False,
                     host: str = "http://127.0.0.1:6443") -> tuple[Connections, socket.socket]:
    """A pool whose one idle connection will read `answer` (and then the end of the
    stream, with `close_after`); the server's end is returned, its requests readable."""
    pool = Connections(host, None)
    ours, servers = socket.socketpair()
    connection = pool._new(TIMEOUTS)
    connection.sock = ours
    servers.sendall(answer)
    if close_after:
        servers.shutdown(socket.SHUT_WR)
    pool._idle.append(connection)
    return pool, servers


def send(pool: Connections, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    """Sent on the pool's idle connection as it is (`send` would find it readable, the
    answer being there already, and take a new one)."""
    request = pool.request_bytes(method, "/api/v1/namespaces", body,
                                 {"Accept": "application/json"})
    return pool._exchange(pool._idle.pop(), request, TIMEOUTS)


def test_an_answer_with_a_length_is_read_whole_and_the_connection_kept():
    pool, servers = pool_with_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n"
                                     b"Content-Type: application/json\r\n\r\n{\"a\": true}")
    assert send(pool) == (200, b'{"a": true}')
    assert len(pool._idle) == 1 and pool._idle[0].sock is not None
    assert servers.recv(4096).startswith(b"GET /api/v1/namespaces HTTP/1.1\r\n")


def test_a_chunked_answer_read_one_byte_at_a_time(monkeypatch):
    monkeypatch.setattr(connections, "_READ_SIZE", 1)
    pool, _ = pool_with_answer(b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                               b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    assert send(pool, "POST", b"{}") == (201, b"hello world")
    assert len(pool._idle) == 1


def test_an_interim_answer_is_skipped():
    pool, _ = pool_with_answer(b"HTTP/1.1 100 Continue\r\n\r\n"
                               b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    assert send(pool) == (200, b"ok")


def test_an_answer_that_closes_the_connection_is_not_kept():
    pool, _ = pool_with_answer(b"HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\n"
                               b"Content-Length: 4\r\n\r\nslow")
    assert send(pool) == (429, b"slow")
    assert pool._idle == []


def test_a_body_the_close_ends_is_read_to_the_end():
    pool, _ = pool_with_answer(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", close_after=True)
    assert send(pool) == (200, b"until the end")
    assert pool._idle == []


def test_an_answer_cut_short_is_an_incomplete_read_and_the_connection_goes():
    pool, _ = pool_with_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                               close_after=True)
    connection = pool._idle[-1]
    with pytest.raises(http.client.IncompleteRead):
        send(pool)
    assert connection.sock is None and pool._idle == []


@pytest.mark.parametrize("after", [b"garbage",
                                   b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"])
def test_bytes_after_a_whole_answer_are_nobodys_and_the_connection_goes(after):
    """An answer is one answer: what follows it in the same read (another answer, garbage)
    is neither added to its body nor left for the next request to take as its own."""
    pool, _ = pool_with_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + after)
    connection = pool._idle[-1]
    assert send(pool) == (200, b"ok")
    assert connection.sock is None and pool._idle == []


def test_a_stream_closed_before_any_answer_is_unanswered():
    pool, _ = pool_with_answer(b"", close_after=True)
    with pytest.raises(connections._Unanswered) as raised:
        pool._exchange(pool._idle.pop(), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", TIMEOUTS)
    assert isinstance(raised.value.cause, http.client.RemoteDisconnected)


def test_an_answer_sent_before_the_request_was_read_is_read_after_the_send_fails():
    """kube-apiserver answers a body beyond its limit (413) without reading it, and closes:
    the client's send fails, and the answer waiting in its socket is what it gets."""
    pool, servers = pool_with_answer(b"HTTP/1.1 413 Request Entity Too Large\r\n"
                                     b"Content-Length: 9\r\n\r\ntoo large")
    connection = pool._idle[-1]
    servers.close()
    assert send(pool, "PATCH", b"x" * 300_000) == (413, b"too large")
    assert connection.sock is None and pool._idle == []  # a closed connection goes


@pytest.mark.parametrize("early", [b"", b"HTTP/1.1 413 Request Ent", b"\x16\x03 garbage"])
def test_a_send_that_fails_with_no_whole_answer_waiting_is_unanswered(early):
    pool, servers = pool_with_answer(early)
    servers.close()
    with pytest.raises(connections._Unanswered) as raised:
        send(pool, "PUT", b"x" * 300_000)
    assert isinstance(raised.value.cause, BrokenPipeError | ConnectionResetError)


def test_a_request_refused_before_sending_leaves_the_idle_connection_in_the_pool():
    pool, servers = pool_with_answer(b"")
    idle = pool._idle[-1]
    with pytest.raises(ValueError, match="cannot be sent"):
        pool.send("GET", "/", None, {"Impersonate-User": "a\r\nX: 1"}, TIMEOUTS)
    assert pool._idle == [idle] and idle.sock is not None
    servers.setblocking(False)
    with pytest.raises(BlockingIOError):  # and nothing of it went out
        servers.recv(1)


@pytest.mark.parametrize("garbage", [b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
                                     b"HTTP/1.1 abc OK\r\n\r\n",
                                     b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n"])
def test_bytes_that_are_no_answer_are_refused_and_the_connection_goes(garbage):
    pool, _ = pool_with_answer(garbage)
    connection = pool._idle[-1]
    with pytest.raises(MalformedAnswer):
        send(pool)
    assert connection.sock is None


def test_a_switch_of_protocol_nobody_asked_for_is_refused():
    pool, _ = pool_with_answer(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n"
                               b"Connection: Upgrade\r\n\r\n")
    with pytest.raises(MalformedAnswer, match="switched protocols"):
        send(pool)


def test_the_request_goes_out_as_one_piece_with_its_length():
    pool = Connections("https://[::1]:6443/k8s/clusters/c-1/", None)
    request = pool.request_bytes("PATCH", "/api/v1/namespaces/a/configmaps/b?force=true",
                                 b'{"x":1}', {"Content-Type": "application/apply-patch+yaml",
                                              "Authorization": "Bearer t"})
    assert request == (b"PATCH /k8s/clusters/c-1/api/v1/namespaces/a/configmaps/b?force=true "
                       b"HTTP/1.1\r\nHost: [::1]:6443\r\n"
                       b"Content-Type: application/apply-patch+yaml\r\n"
                       b"Authorization: Bearer t\r\nContent-Length: 7\r\n\r\n{\"x\":1}")


def test_lengths_as_http_client_sends_them():
    pool = Connections("http://kube.example.test", None)
    assert pool.request_bytes("GET", "/version", None, {}) == (
        b"GET /version HTTP/1.1\r\nHost: kube.example.test\r\n\r\n")
    assert b"Content-Length: 0\r\n" in pool.request_bytes("POST", "/api/v1/x", None, {})
    assert b"Content-Length: 0\r\n" in pool.request_bytes("DELETE", "/api/v1/x", b"", {})


@pytest.mark.parametrize("target", ["/api/v1/namespaces/a b", "/api/v1/x\r\nX-Evil: 1",
                                    "/api/v1/x\x00", "/api/v1/x\x7f"])
def test_a_target_that_could_split_the_request_is_refused(target):
    with pytest.raises(http.client.InvalidURL):
        Connections("http://127.0.0.1:1", None).request_bytes("GET", target, None, {})


@pytest.mark.parametrize("name, value", [("Impersonate-User", "alice\r\nX-Evil: 1"),
                                         ("Authorization", "Bearer t\n"),
                                         ("Bad Name", "v"), ("X:Y", "v"), ("", "v")])
def test_a_header_that_could_split_the_request_is_refused(name, value):
    with pytest.raises(ValueError, match="cannot be sent"):
        Connections("http://127.0.0.1:1", None).request_bytes("GET", "/", None, {name: value})
