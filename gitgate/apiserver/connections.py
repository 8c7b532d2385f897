"""Kept-alive connections to the API server, sent on with the standard library's
`http.client`: the path every request but a watch takes.

Why not the official client's own path: for each request it serializes the parameters again,
goes through urllib3's pool manager, its connection pool and its response wrapper, and parses
the answer's headers twice. That costs about 0.45 ms of CPU per request on this project's
2-core bench, against 0.2 ms for the same request sent here over the same kept-alive TLS
connection (`bench/README.md`); a cold apply of 1,000 bundles sends 14,000 of them on the
cores the API server and Karmada share. The official client still loads the kubeconfig (its
certificates, token and refresh hook, impersonation header) and still serves watches and the
Lease: `for_configuration` answers None for a configuration whose connection only urllib3
makes as the kubeconfig asks (a proxy, socket options, a host name asserted apart from the
server's), and the transport then sends through the official client as before."""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit


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


class _Tls(http.client.HTTPSConnection):
    """An HTTPS connection that names `server_name` in its TLS handshake (the kubeconfig's
    `tls-server-name`) instead of the host it connects to."""

    def __init__(self, host: str, port: int | None, *, timeout: float,
                 context: ssl.SSLContext, server_name: str) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self.server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            self.sock, server_hostname=self.server_name or self.host)


# how a connection the server already closed fails a request before any byte of an answer:
# the send refused, or the status line's read finding the end of the stream
_CLOSED_UNANSWERED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                      ConnectionAbortedError, ssl.SSLEOFError, ssl.SSLZeroReturnError)


class _Unanswered(Exception):
    """A request that failed on a closed connection before any byte of an answer came."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


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
        self._idle: list[http.client.HTTPConnection] = []
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
        connection = self._take(timeouts)
        reused = connection.sock is not None
        try:
            return self._exchange(connection, method, path, body, headers, timeouts)
        except _Unanswered as unanswered:
            if not reused or method == "POST":
                raise unanswered.cause from None
        with self._lock:
            self.resent += 1
        try:
            return self._exchange(self._new(timeouts), method, path, body, headers, timeouts)
        except _Unanswered as unanswered:
            raise unanswered.cause from None

    def _exchange(self, connection: http.client.HTTPConnection, method: str, path: str,
                  body: bytes | None, headers: dict[str, str],
                  timeouts: tuple[float, float]) -> tuple[int, bytes]:
        """The request on `connection`, which goes back to the pool only after its answer was
        read whole and the server left it open. `_Unanswered` when the connection was found
        closed before any byte of an answer came."""
        try:
            if connection.sock is None:
                self._connect(connection, timeouts)
            if connection.sock.gettimeout() != timeouts[1]:  # a pool's clients may differ
                connection.sock.settimeout(timeouts[1])
            try:
                connection.request(method, self.prefix + path, body=body, headers=headers)
                response = connection.getresponse()
            except _CLOSED_UNANSWERED as exc:
                raise _Unanswered(exc) from exc
            data = response.read()
        except TimeoutError as exc:
            connection.close()
            if isinstance(exc, ConnectTimeoutError):
                raise
            raise ReadTimeoutError(f"read timed out after {timeouts[1]:g}s") from exc
        except BaseException:
            connection.close()
            raise
        if response.will_close:
            connection.close()
        else:
            with self._lock:
                self._idle.append(connection)
        return response.status, data

    def _take(self, timeouts: tuple[float, float]) -> http.client.HTTPConnection:
        """The connection last put back whose server has not closed it since, or a new one."""
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._new(timeouts)
            if not _dropped(connection):
                return connection
            connection.close()

    def _new(self, timeouts: tuple[float, float]) -> http.client.HTTPConnection:
        if self.https:
            assert self.context is not None
            return _Tls(self.host, self.port, timeout=timeouts[0], context=self.context,
                        server_name=self.server_name)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeouts[0])

    @staticmethod
    def _connect(connection: http.client.HTTPConnection, timeouts: tuple[float, float]) -> None:
        connection.timeout = timeouts[0]
        try:
            connection.connect()
        except TimeoutError as exc:
            raise ConnectTimeoutError(f"no connection within {timeouts[0]:g}s") from exc
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        _close_all(self._idle, self._lock)


def _close_all(idle: list[http.client.HTTPConnection], lock: threading.Lock) -> None:
    with lock:
        closing = idle[:]
        idle.clear()
    for connection in closing:
        connection.close()


def _dropped(connection: http.client.HTTPConnection) -> bool:
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
