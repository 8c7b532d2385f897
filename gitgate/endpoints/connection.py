"""One connection as uvicorn serves it, held to gitgate's bounds: uvicorn's llhttp protocol
(`httptools`, which refuses what could be read two ways: a space before a colon, obs-fold,
two Content-Lengths, Transfer-Encoding beside Content-Length, a bare LF, control bytes in a
value) with what uvicorn leaves open added:

- admission at connect: at most `per_client` connections from one address and
  `connections` in all (more are answered 503 at once, before they can hold anything);
- a deadline for the whole request, from its first byte (or the connection's opening) to
  the end of its body, however slowly it trickles: 408, and the connection is closed;
- at most `header_bytes` of request line and headers and `header_fields` fields: 431.

An answer sent before the request was read shuts the sending side and reads what the client
still sends for a moment before the close: closed with its request unread, the socket would
answer the client with a reset, which can overtake the answer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


@dataclass(frozen=True)
class Limits:
    request_deadline: float = 10.0  # seconds for a whole request, line to last body byte
    connections: int = 512
    per_client: int = 64
    header_bytes: int = 16 << 10
    header_fields: int = 100
    body_bytes: int = 1 << 20  # a webhook's payload (and any other body)
    linger: float = 1.0  # how long a refused connection's request is read before the close


class Admission:
    """Open connections, in total and per client address (the event loop's thread only)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.total = 0
        self.by_client: dict[str, int] = {}

    def admit(self, client: str) -> bool:
        if (self.total >= self.limits.connections
                or self.by_client.get(client, 0) >= self.limits.per_client):
            return False
        self.total += 1
        self.by_client[client] = self.by_client.get(client, 0) + 1
        return True

    def release(self, client: str) -> None:
        self.total -= 1
        left = self.by_client[client] - 1
        if left:
            self.by_client[client] = left
        else:
            del self.by_client[client]


class _HeadTooLarge(Exception):
    pass


def answer_bytes(status: int, text: str) -> bytes:
    body = text.encode()
    return (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"content-type: text/plain; charset=utf-8\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


class BoundedProtocol(HttpToolsProtocol):
    """uvicorn's llhttp protocol with gitgate's bounds (`bounded_protocol` makes one class per
    server, holding its limits and its admission count)."""

    limits: ClassVar[Limits]
    admission: ClassVar[Admission]

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._peer = "?"
        self._admitted = False
        self._refused = False  # answered by gitgate before the request was read: lingering
        self._deadline: asyncio.TimerHandle | None = None
        self._head = 0
        self._fields = 0
        self._too_large = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._peer = self.client[0] if self.client else "?"
        if not self.admission.admit(self._peer):
            self.connections.discard(self)  # never served: not one of uvicorn's connections
            self._refuse(503, "too many connections\n")
            return
        self._admitted = True
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._admitted:
            self._admitted = False
            self.admission.release(self._peer)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:  # read and dropped until the client closes or the linger ends
            return
        super().data_received(data)

    # ------------------------------------------------------------------ the parser's callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head = self._fields = 0
        if self._deadline is None:
            self._arm()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        self._count(len(name) + len(value) + 4)
        if self._fields > self.limits.header_fields:
            self._too_large = True
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def _count(self, size: int) -> None:
        self._head += size
        if self._head > self.limits.header_bytes:
            self._too_large = True
            raise _HeadTooLarge

    def send_400_response(self, msg: str) -> None:
        """The parser refused the request (or a callback above did)."""
        if self._too_large:
            self._refuse(431, "request headers too large or too many\n")
        else:
            self._refuse(400, "malformed request\n")

    # ------------------------------------------------------------------ the deadline
    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.limits.request_deadline, self._late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _late(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self._refused:
            return
        if self.pipeline:  # a pipelined request waits, unread, for the one before it
            self._arm()
            return
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()  # answered already (say, 413): the rest is not waited for
            return
        self._refuse(408, "request not sent in time\n")

    def _refuse(self, status: int, text: str) -> None:
        self._refused = True
        self._disarm()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the application's answer, if any, goes nowhere
            self.cycle.message_event.set()
        self.transport.write(answer_bytes(status, text))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(self.limits.linger, self.transport.close)

    def eof_received(self) -> None:
        if self._refused:
            self.transport.close()


def bounded_protocol(limits: Limits) -> type[BoundedProtocol]:
    """A protocol class for one server: its limits, and one admission count for all its
    connections."""
    return type("GitgateProtocol", (BoundedProtocol,),
                {"limits": limits, "admission": Admission(limits)})
