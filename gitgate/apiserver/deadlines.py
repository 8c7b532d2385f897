"""A deadline for each whole request to the API server: connecting, sending, the answer's
headers and its body, however slowly the server sends them.

A socket timeout bounds one read; a server sending a byte every few seconds, or a header
that never ends, never trips it. So one watchdog thread holds the deadline of every request
in flight, and shuts down the socket of a request whose deadline passed: whatever read the
requesting thread is blocked in (urllib3's, `http.client`'s header parser's) ends at once,
and the requester, seeing its deadline `expired`, says so.

The socket is known only once urllib3 has taken a connection from its pool, deep inside
`urlopen`; the connection classes of a guarded pool manager (`guard`) hand it to the deadline
of the request their thread is making (`Deadline.during`)."""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_CURRENT = threading.local()  # the deadline of the request this thread is sending, if any


class Deadline:
    """One request's deadline: `at` on the watchdog's clock; `expired` once it passed (and
    the request's socket, if it had one, was shut down); `reused` when its request went out
    on a connection that had carried one before."""

    __slots__ = ("at", "seconds", "expired", "reused", "_connection")

    def __init__(self, at: float, seconds: float) -> None:
        self.at = at
        self.seconds = seconds
        self.expired = False
        self.reused = False
        self._connection: Any = None

    @contextmanager
    def during(self) -> Iterator[Deadline]:
        """The connection a request on this thread takes, inside the block, is this
        deadline's to cut."""
        previous = getattr(_CURRENT, "deadline", None)
        _CURRENT.deadline = self
        try:
            yield self
        finally:
            _CURRENT.deadline = previous

    def watch(self, connection: Any, *, reused: bool) -> None:
        self._connection = connection
        self.reused = reused
        connection.gitgate_deadline = self
        if self.expired:  # it passed while the connection was being taken
            self.cut()

    def cut(self) -> None:
        """Its request's socket shut down, unless the connection has gone on to another
        request since (whose deadline it then is)."""
        self.expired = True
        connection = self._connection
        if connection is None or getattr(connection, "gitgate_deadline", None) is not self:
            return
        sock = getattr(connection, "sock", None)
        raw = sock if isinstance(sock, socket.socket) else getattr(sock, "socket", None)
        if isinstance(raw, socket.socket):
            # the plain socket's shutdown, under TLS too: a read blocked in it ends (a socket
            # closed already has nothing to end)
            with contextlib.suppress(OSError, ValueError):
                socket.socket.shutdown(raw, socket.SHUT_RDWR)


class Watchdog:
    """The thread that cuts the requests whose deadline passed. It sleeps until the earliest
    deadline in flight (not at all while none is), so a request that ends in time costs a
    dictionary entry, not a wake-up."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._in_flight: dict[int, Deadline] = {}
        self._changed = threading.Condition()
        self._wakes_at = math.inf
        self._thread: threading.Thread | None = None

    def start(self, seconds: float) -> Deadline:
        deadline = Deadline(self.clock() + seconds, seconds)
        with self._changed:
            self._in_flight[id(deadline)] = deadline
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="request-deadlines")
                self._thread.start()
            if deadline.at < self._wakes_at:
                self._changed.notify()
        return deadline

    def stop(self, deadline: Deadline) -> None:
        with self._changed:
            self._in_flight.pop(id(deadline), None)

    def _run(self) -> None:
        with self._changed:
            while True:
                now = self.clock()
                due = [d for d in self._in_flight.values() if d.at <= now]
                for deadline in due:  # cut again while it is in flight: its socket may
                    deadline.cut()  # have come after the first cut
                later = [d.at for d in self._in_flight.values() if d.at > now]
                self._wakes_at = min(later, default=math.inf)
                wait = min(self._wakes_at - now, 0.05) if due else self._wakes_at - now
                self._changed.wait(None if wait == math.inf else max(wait, 0.001))


WATCHDOG = Watchdog()


class _Cut:
    """What a guarded pool's connections add: each request hands the connection to the
    deadline of the request its thread is sending."""

    gitgate_requests = 0  # the requests this connection has sent

    def connect(self) -> None:
        deadline = getattr(_CURRENT, "deadline", None)
        if deadline is not None:
            deadline.watch(self, reused=False)
        super().connect()  # type: ignore[misc]

    def request(self, *args: Any, **kwargs: Any) -> None:
        deadline = getattr(_CURRENT, "deadline", None)
        if deadline is not None:
            deadline.watch(self, reused=self.gitgate_requests > 0)
        self.gitgate_requests += 1
        super().request(*args, **kwargs)  # type: ignore[misc]


_GUARDED: dict[tuple[type, ...], type] = {}
_GUARDED_LOCK = threading.Lock()


def _guarded(pool_class: Any, mixins: tuple[type, ...]) -> type:
    """`pool_class` (urllib3's, or its SOCKS proxy's) with connections a deadline can cut,
    and `mixins` of their own."""
    with _GUARDED_LOCK:
        key = (pool_class, *mixins)
        if key not in _GUARDED:
            connection = pool_class.ConnectionCls
            _GUARDED[key] = type(pool_class.__name__, (pool_class,), {
                "ConnectionCls": type(connection.__name__, (*mixins, _Cut, connection), {})})
        return _GUARDED[key]


def guard(manager: Any, mixins: tuple[type, ...] = ()) -> None:
    """`manager` (a urllib3 pool manager, a proxy's too) makes connections a deadline can cut
    (and with `mixins`); the pools it made before are closed."""
    manager.pool_classes_by_scheme = {scheme: _guarded(pool_class, mixins) for scheme, pool_class
                                      in manager.pool_classes_by_scheme.items()}
    manager.clear()
