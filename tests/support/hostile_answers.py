"""A hostile API server's answers, written raw on the socket by the emulator
(`ApiState.raw_answers`) for the requests a test picks: dripped a byte at a time, a header
that never ends, a gibibyte, a watch line without end, gzip nobody asked for, a redirect.

Each gives up after `LASTING` seconds (or its bytes) and then ends its answer properly, so
a client without bounds gets an answer in the end and its test fails, instead of hanging."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable

LASTING = 8.0  # seconds a slow answer goes on before it ends properly
Send = Callable[[bytes], None]
Writer = Callable[[Send], None]


class Sent:
    """What an answer managed to send before the client stopped reading it."""

    def __init__(self) -> None:
        self.bytes = 0
        self.done = False  # the answer ended, or the client stopped reading it
        self.headers: list[dict[str, str]] = []  # each answered request's headers


def on(method: str, path_part: str, writer: Writer, seen: Sent | None = None):
    """A `raw_answers` hook: `writer` answers the requests of `method` whose path holds
    `path_part` (every one of them)."""
    def hook(command: str, path: str, headers: dict[str, str]) -> Writer | None:
        if command != method or path_part not in path:
            return None
        if seen is not None:
            seen.headers.append(headers)
        return writer
    return hook


def dripped_body(every: float = 0.2, lasting: float = LASTING) -> Writer:
    """A 200 whose body comes a byte every `every` seconds."""
    count = int(lasting / every)

    def write(send: Send) -> None:
        send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             b"Content-Length: %d\r\n\r\n" % (count + 2))
        send(b"{")
        for _ in range(count):
            time.sleep(every)
            send(b" ")
        send(b"}")
    return write


def dripped_header(every: float = 0.2, lasting: float = LASTING) -> Writer:
    """A 200 one of whose headers comes a byte every `every` seconds."""
    def write(send: Send) -> None:
        send(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(int(lasting / every)):
            time.sleep(every)
            send(b"a")
        send(b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    return write


def endless_header(size: int = 8 << 20) -> Writer:
    """A 200 whose one header goes on for `size` bytes, as fast as the client reads."""
    def write(send: Send) -> None:
        send(b"HTTP/1.1 200 OK\r\nX-Endless: ")
        chunk = b"a" * 65536
        for _ in range(size // len(chunk)):
            send(chunk)
        send(b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    return write


def huge_body(size: int, sent: Sent, *, chunked: bool) -> Writer:
    """A 200 of `size` bytes of a JSON string, made as it goes out (never held whole), with
    its length announced or in chunks; `sent` counts what went out."""
    def write(send: Send) -> None:
        framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % size
        send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + framing + b"\r\n\r\n")
        piece = b"x" * 65536
        parts = [b'"', *([piece] * ((size - 2) // len(piece))),
                 b"x" * ((size - 2) % len(piece)), b'"']
        try:
            for part in parts:
                send(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
                sent.bytes += len(part)
            if chunked:
                send(b"0\r\n\r\n")
        finally:
            sent.done = True
    return write


def endless_watch_line(size: int, sent: Sent) -> Writer:
    """A watch's answer whose first event never ends, until `size` bytes; then it does."""
    def write(send: Send) -> None:
        send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"x" * 65536
        try:
            for _ in range(size // len(piece)):
                send(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent.bytes += len(piece)
            send(b"1\r\n\n\r\n0\r\n\r\n")
        finally:
            sent.done = True
    return write


def dripped_watch(every: float = 0.2, lasting: float = LASTING) -> Writer:
    """A watch's answer that sends a blank line every `every` seconds."""
    def write(send: Send) -> None:
        send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n")
        for _ in range(int(lasting / every)):
            time.sleep(every)
            send(b"1\r\n\n\r\n")
        send(b"0\r\n\r\n")
    return write


def gzipped(status: int, document: dict) -> Writer:
    """`document` gzipped, though the request asked for identity."""
    def write(send: Send) -> None:
        data = gzip.compress(json.dumps(document).encode())
        send(b"HTTP/1.1 %d Answer\r\nContent-Type: application/json\r\n"
             b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % (status, len(data)) + data)
    return write


def redirect(location: str, status: int = 307) -> Writer:
    def write(send: Send) -> None:
        send(b"HTTP/1.1 %d Temporary Redirect\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n"
             % (status, location.encode()))
    return write
