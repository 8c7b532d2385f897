"""Kept-alive connections to the API server: the path every request but a watch takes. A
request goes out in one write; its answer is read by httptools (llhttp, the C parser uvicorn
uses), not by `http.client`.

Why not the official client's own path: for each request it serializes the parameters again,
goes through urllib3's pool manager, its connection pool and its response wrapper, and parses
the answer's headers twice. That costs about 0.45 ms of CPU per request on this project's
2-core bench, against 0.2 ms for the same request over a kept-alive TLS connection through
`http.client`, and 0.11 ms here (`bench/README.md`, eighth and eleventh sessions); a cold
apply of 1,000 bundles sends 14,000 of them on the cores the API server and Karmada share.
`http.client` spends most of its share parsing each answer's headers with the email package.
The official client still loads the kubeconfig (its certificates, token and refresh hook,
impersonation header) and still serves watches and the Lease: `for_configuration` answers
None for a configuration whose connection only urllib3 makes as the kubeconfig asks (a
proxy, socket options, a host name asserted apart from the server's), and the transport then
sends through the official client as before."""

from __future__ import annotations

import http.client
import re
import select
import socket
import ssl
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit

import httptools


class ConnectTimeoutError(TimeoutError):
    """No connection within the connect timeout (named as urllib3 names it, which
    `apierrors.transport_error` reads)."""


class ReadTimeoutError(TimeoutError):
    """Connected, but no answer within the read timeout."""


def tls_context(configuration: Any) -> ssl.SSLContext:
    """The TLS settings the official client gives urllib3, as a context: the kubeconfig's
    certificate authority (or the system's), its client certificate, and no verification at
    all where it says `insecure-skip-tls-verify`."""
    if not configuration.verify_ssl:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None,
                                             cadata=configuration.ca_cert_data or None)
        if configuration.assert_hostname is False:
            context.check_hostname = False
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    return context


# how a connection the server already closed fails a request before any byte of an answer:
# the send refused, or the read finding the end of the stream
_CLOSED_UNANSWERED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                      ConnectionAbortedError, ssl.SSLEOFError, ssl.SSLZeroReturnError)

# what http.client refuses to put in a request line or a header, refused here as well: a
# control character or a space in the target, a header name that is not a token, a line
# break in a header's value (each could smuggle a second request into the first)
_BAD_TARGET = re.compile(r"[\x00-\x20\x7f]")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\r\n\x00]")

_READ_SIZE = 65536
# methods whose request carries a length even without a body, as http.client sends them
_LENGTH_ALWAYS = frozenset({"POST", "PUT", "PATCH"})


class _Unanswered(Exception):
    """A request that failed on a closed connection before any byte of an answer came."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class MalformedAnswer(http.client.HTTPException):
    """Bytes from the server that are not an HTTP/1.1 answer."""


class _Answer:
    """httptools' callbacks for one answer: its body's parts, and whether it is complete and
    leaves the connection open."""

    __slots__ = ("parser", "parts", "complete", "keep_alive", "headers_done", "framed")

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.parts: list[bytes] = []
        self.complete = False
        self.keep_alive = False
        self.headers_done = False
        self.framed = False  # a Content-Length or Transfer-Encoding says where the body ends

    def on_message_begin(self) -> None:
        if self.complete:  # bytes after the whole answer, which no request asked for
            raise MalformedAnswer("bytes after the answer")

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.parts.append(body)

    def on_message_complete(self) -> None:
        if self.parser.get_status_code() < 200:  # an interim answer (100 Continue): skipped
            self.parts.clear()
            self.headers_done = self.framed = False
            return
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()


class _Connection:
    """One connection to the server, kept alive between requests: a request goes out in one
    write (its line, headers and body), and its answer is read by httptools' parser."""

    __slots__ = ("sock", "host", "port", "context", "server_name")

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None,
                 server_name: str) -> None:
        self.sock: socket.socket | None = None
        self.host = host
        self.port = port
        self.context = context
        self.server_name = server_name

    def connect(self, timeout: float) -> None:
        """Connected (and the TLS handshake done) within `timeout`."""
        sock = socket.create_connection((self.host, self.port), timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.context is not None:
                sock = self.context.wrap_socket(sock, server_hostname=self.server_name
                                                or self.host)
        except BaseException:
            sock.close()
            raise
        self.sock = sock

    def exchange(self, request: bytes) -> tuple[int, bytes, bool]:
        """`request` sent, its answer read whole: the status, the body and whether the
        server keeps the connection open. `_Unanswered` when the connection turns out closed
        before any byte of an answer came, `http.client.IncompleteRead` when the stream ends
        in the middle of one, `MalformedAnswer` for bytes that are no answer."""
        sock = self.sock
        assert sock is not None
        try:
            sock.sendall(request)
        except _CLOSED_UNANSWERED as exc:
            early = _early_answer(sock)
            if early is None:
                raise _Unanswered(exc) from exc
            return early
        try:
            data = sock.recv(_READ_SIZE)
            if not data:
                raise http.client.RemoteDisconnected(
                    "the server closed the connection without an answer")
        except _CLOSED_UNANSWERED as exc:
            raise _Unanswered(exc) from exc
        return _read_answer(sock, data)

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()


def _read_answer(sock: socket.socket, data: bytes) -> tuple[int, bytes, bool]:
    """The answer whose first bytes are `data`, read whole from `sock`: its status, its body
    and whether the server keeps the connection open."""
    answer = _Answer()
    while True:
        try:
            answer.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            raise MalformedAnswer("the server switched protocols unasked") from None
        except httptools.HttpParserError as exc:
            if answer.complete:  # the answer stands; the stream after it is nobody's
                return answer.parser.get_status_code(), b"".join(answer.parts), False
            raise MalformedAnswer(f"not an HTTP/1.1 answer: {exc}") from None
        if answer.complete:
            return answer.parser.get_status_code(), b"".join(answer.parts), answer.keep_alive
        data = sock.recv(_READ_SIZE)
        if not data:
            if answer.headers_done and not answer.framed:  # a body ended by the close
                return answer.parser.get_status_code(), b"".join(answer.parts), False
            raise http.client.IncompleteRead(b"".join(answer.parts))


def _early_answer(sock: socket.socket) -> tuple[int, bytes, bool] | None:
    """The answer a server sent before it had read the whole request, then closed the
    connection (kube-apiserver's 413 for a body beyond its limit), when one came whole;
    None when none did. urllib3 reads such an answer too."""
    try:
        data = sock.recv(_READ_SIZE)
        if not data:
            return None
        status, body, _ = _read_answer(sock, data)
    except (OSError, http.client.HTTPException):
        return None
    return status, body, False


class Connections:
    """A pool of kept-alive connections to one API server; safe to share between threads.
    A connection goes back to the pool only after its answer was read whole and the server
    left it open."""

    def __init__(self, host: str, context: ssl.SSLContext | None, server_name: str = "") -> None:
        parts = urlsplit(host)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")  # a server behind a path (a proxy's)
        self.context = context
        self.server_name = server_name
        named = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address
        self.host_header = named + (f":{self.port}" if self.port else "")
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self.resent = 0  # requests sent again on a new connection (see `send`)
        # the idle connections closed when the pool goes, or at the latest when the process
        # exits, not left to the collector (which warns of each socket it closes)
        weakref.finalize(self, _close_all, self._idle, self._lock)

    @classmethod
    def for_configuration(cls, configuration: Any) -> Connections | None:
        """The pool for the official client's `configuration`, or None where its connection
        needs what only the official client's urllib3 pool does."""
        host = str(configuration.host or "")
        if (configuration.proxy or configuration.socket_options is not None
                or getattr(configuration, "keep_alive", False)
                or isinstance(configuration.assert_hostname, str)
                or urlsplit(host).scheme not in ("http", "https")):
            return None
        https = host.startswith("https:")
        return cls(host, tls_context(configuration) if https else None,
                   configuration.tls_server_name or "")

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str],
             timeouts: tuple[float, float]) -> tuple[int, bytes]:
        """One request, its status and whole body. Raises OSError (or http.client's
        errors) when there is no answer: ConnectTimeoutError and ReadTimeoutError by name.

        A kept-alive connection the server closed as the request went out (its idle timeout
        ran out at that moment, too late for `_take` to see) fails before any byte of an
        answer: the server read nothing of it, so it goes again at once, on a new connection,
        as urllib3 and Go's client do. Not a POST, whose server might have acted before it
        closed; and once only: a new connection failing the same way is the server's trouble,
        for the caller's retry policy."""
        request = self.request_bytes(method, path, body, headers)  # refused before a take
        connection = self._take(timeouts)
        reused = connection.sock is not None
        try:
            return self._exchange(connection, request, timeouts)
        except _Unanswered as unanswered:
            if not reused or method == "POST":
                raise unanswered.cause from None
        with self._lock:
            self.resent += 1
        try:
            return self._exchange(self._new(timeouts), request, timeouts)
        except _Unanswered as unanswered:
            raise unanswered.cause from None

    def request_bytes(self, method: str, path: str, body: bytes | None,
                      headers: dict[str, str]) -> bytes:
        """The request as it goes out: its line, `Host`, `headers`, the body's length and
        the body. ValueError (http.client's InvalidURL for the target) for what could not go
        out as one request."""
        target = self.prefix + path
        if _BAD_TARGET.search(target):
            raise http.client.InvalidURL(f"a request target with a control character or a "
                                         f"space: {target!r}")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}"]
        for name, value in headers.items():
            if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
                raise ValueError(f"the header {name!r} cannot be sent: a name that is not a "
                                 "token, or a line break in its value")
            lines.append(f"{name}: {value}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        elif method in _LENGTH_ALWAYS:
            lines.append("Content-Length: 0")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head + body if body else head

    def _exchange(self, connection: _Connection, request: bytes,
                  timeouts: tuple[float, float]) -> tuple[int, bytes]:
        """`request` on `connection`, which goes back to the pool only after its answer was
        read whole and the server left it open. `_Unanswered` when the connection was found
        closed before any byte of an answer came."""
        try:
            if connection.sock is None:
                self._connect(connection, timeouts)
            sock = connection.sock
            assert sock is not None
            if sock.gettimeout() != timeouts[1]:  # a pool's clients may differ
                sock.settimeout(timeouts[1])
            status, data, keep_alive = connection.exchange(request)
        except TimeoutError as exc:
            connection.close()
            if isinstance(exc, ConnectTimeoutError):
                raise
            raise ReadTimeoutError(f"read timed out after {timeouts[1]:g}s") from exc
        except BaseException:
            connection.close()
            raise
        if keep_alive:
            with self._lock:
                self._idle.append(connection)
        else:
            connection.close()
        return status, data

    def _take(self, timeouts: tuple[float, float]) -> _Connection:
        """The connection last put back whose server has not closed it since, or a new one."""
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._new(timeouts)
            if not _dropped(connection):
                return connection
            connection.close()

    def _new(self, timeouts: tuple[float, float]) -> _Connection:
        """A connection not yet connected (it connects as it sends its first request)."""
        port = self.port or (443 if self.https else 80)
        return _Connection(self.host, port, self.context if self.https else None,
                           self.server_name)

    @staticmethod
    def _connect(connection: _Connection, timeouts: tuple[float, float]) -> None:
        try:
            connection.connect(timeouts[0])
        except TimeoutError as exc:
            raise ConnectTimeoutError(f"no connection within {timeouts[0]:g}s") from exc

    def close(self) -> None:
        _close_all(self._idle, self._lock)


def _close_all(idle: list[_Connection], lock: threading.Lock) -> None:
    with lock:
        closing = idle[:]
        idle.clear()
    for connection in closing:
        connection.close()


def _dropped(connection: _Connection) -> bool:
    """Whether the server closed an idle connection (or sent on it unasked): readable while
    no request is in flight means either."""
    sock = connection.sock
    if sock is None:
        return True
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
