"""The loop's one small HTTP server: /healthz, /readyz, /metrics, /status, the Git webhook
(`POST /hooks/git`, accepted only with a valid X-Hub-Signature-256) and `POST /reconcile`
(a pass now, accepted only with `Authorization: Bearer <the webhook secret>`); the read-only
web page under `/ui/` when the loop is given one (`output.webui`).

Requests are read by an asyncio event loop (the standard library's: no framework for five
routes), so that a slow or half-sent request holds no thread and health probes are answered
whatever else is connected; the answers that call into the loop run in worker threads."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from gitgate.errors import ConfigError

MAX_HOOK_BODY = 1 << 20


def valid_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """GitHub-style `sha256=<hex>` HMAC of the body."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256="))


class LoopEndpoints:
    """What the server needs from the loop."""

    def __init__(self, *, ready: Callable[[], bool], status: Callable[[], dict[str, Any]],
                 metrics: Callable[[], bytes], trigger: Callable[[], None],
                 webhook_secret: bytes | None,
                 request_pass: Callable[[], int] | None = None,
                 leading: Callable[[], bool] = lambda: True,
                 pages: Callable[[Request], Answer] | None = None):
        self.ready = ready
        self.status = status
        self.metrics = metrics
        self.trigger = trigger
        self.webhook_secret = webhook_secret
        # asks the loop for a pass now; returns how many passes had run before it
        self.request_pass = request_pass
        self.leading = leading
        self.pages = pages  # the read-only web page under /ui/ (None: not served)


# A request must arrive whole (line, headers and body) within REQUEST_DEADLINE, however slowly
# its bytes trickle in; while it arrives it costs a coroutine and a socket, never a thread, so
# slow clients cannot starve anyone. One client address may hold PER_CLIENT connections at once
# (more are answered 503); /healthz and /readyz are answered on the event loop itself.
REQUEST_DEADLINE = 10.0
MAX_CONNECTIONS = 512
PER_CLIENT = 64
LINGER_SECONDS = 1.0  # how long a refused connection's request is read before the close
LINGER_BYTES = 65536
MAX_HEADER_BYTES = 16 << 10
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = ()  # more headers (Location, Set-Cookie, CSP ...)


class _BadRequest(Exception):
    def __init__(self, answer: Answer):
        self.answer = answer


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: bytes
    query: str = ""  # after `?`, as sent


async def _read_request(reader: asyncio.StreamReader) -> Request:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise _BadRequest(Answer(431, b"request headers too large\n")) from None
    except asyncio.IncompleteReadError:
        raise _BadRequest(Answer(400, b"incomplete request\n")) from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _BadRequest(Answer(400, b"bad request line\n"))
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    body = b""
    if parts[0] == "POST":
        raw = headers.get("content-length", "0")
        length = int(raw) if raw.isdigit() and raw.isascii() else -1
        if length < 0:
            raise _BadRequest(Answer(400, b"bad Content-Length\n"))
        if length > MAX_HOOK_BODY:
            raise _BadRequest(Answer(413, b"payload too large\n"))
        try:
            body = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise _BadRequest(Answer(400, b"incomplete body\n")) from None
    path, _, query = parts[1].partition("?")
    return Request(parts[0], path, headers, body, query)


def respond(endpoints: LoopEndpoints, request: Request) -> Answer:
    """The answer to a whole request (may call into the loop: run off the event loop)."""
    if endpoints.pages is not None and (request.path in ("/", "/ui")
                                        or request.path.startswith("/ui/")):
        return endpoints.pages(request)
    if request.method == "GET":
        if request.path == "/metrics":
            return Answer(200, endpoints.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        if request.path == "/status":
            return Answer(200, json.dumps(endpoints.status(), indent=2).encode(),
                          "application/json")
        return Answer(404, b"not found\n")
    if request.method != "POST":
        return Answer(405, b"method not allowed\n")
    if request.path not in ("/hooks/git", "/reconcile"):
        return Answer(404, b"not found\n")
    if not endpoints.webhook_secret:
        return Answer(403, f"{request.path} disabled: start gitgate with "
                      "--webhook-secret-file\n".encode())
    if request.path == "/reconcile":
        return _reconcile(endpoints, request.headers.get("authorization", ""))
    if not valid_signature(endpoints.webhook_secret, request.body,
                           request.headers.get("x-hub-signature-256")):
        return Answer(401, b"invalid signature\n")
    endpoints.trigger()
    return Answer(202, b"fetch triggered\n")


def _reconcile(endpoints: LoopEndpoints, authorization: str) -> Answer:
    token = authorization.removeprefix("Bearer ").strip()
    if not (endpoints.webhook_secret
            and hmac.compare_digest(token.encode(), endpoints.webhook_secret)):
        return Answer(401, b"unauthorized: send Authorization: Bearer <webhook secret>\n")
    if not endpoints.leading() or endpoints.request_pass is None:
        return Answer(503, b"standby: this replica does not lead; retry (another replica "
                           b"leads)\n")
    before = endpoints.request_pass()
    return Answer(202, json.dumps({"accepted": True, "passesBefore": before}).encode(),
                  "application/json")


def _health(endpoints: LoopEndpoints, request: Request) -> Answer | None:
    """/healthz and /readyz, answered at once on the event loop (never queued behind work)."""
    if request.method == "GET" and request.path == "/healthz":
        return Answer(200, b"ok\n")
    if request.method == "GET" and request.path == "/readyz":
        ready = endpoints.ready()
        return Answer(200 if ready else 503, b"ready\n" if ready else b"not ready\n")
    return None


class _Connections:
    """Open connections, in total and per client address (event-loop thread only)."""

    def __init__(self) -> None:
        self.total = 0
        self.by_client: dict[str, int] = {}

    def admit(self, client: str) -> bool:
        if self.total >= MAX_CONNECTIONS or self.by_client.get(client, 0) >= PER_CLIENT:
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


async def _write(writer: asyncio.StreamWriter, answer: Answer) -> None:
    head = (f"HTTP/1.1 {answer.status} {HTTPStatus(answer.status).phrase}\r\n"
            f"Content-Type: {answer.content_type}\r\nContent-Length: {len(answer.body)}\r\n"
            + "".join(f"{name}: {value}\r\n" for name, value in answer.headers)
            + "Connection: close\r\n\r\n").encode()
    writer.write(head + answer.body)
    with contextlib.suppress(OSError, asyncio.TimeoutError):
        await asyncio.wait_for(writer.drain(), REQUEST_DEADLINE)


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """An answer sent before its request was read: the sending side is shut, and what the
    client still sends is read for a moment before the close. Closed with its request
    unread, the socket would answer the client with a reset, which can overtake the answer."""
    with contextlib.suppress(OSError, asyncio.TimeoutError, RuntimeError):
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(reader.read(LINGER_BYTES), LINGER_SECONDS)


async def _serve(endpoints: LoopEndpoints, connections: _Connections,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = writer.get_extra_info("peername")
    client = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
    if not connections.admit(client):
        await _write(writer, Answer(503, b"too many connections\n"))
        await _linger(reader, writer)
        writer.close()
        return
    try:
        try:
            request = await asyncio.wait_for(_read_request(reader), REQUEST_DEADLINE)
        except _BadRequest as bad:
            await _write(writer, bad.answer)
            return
        except TimeoutError:
            await _write(writer, Answer(408, b"request not sent in time\n"))
            return
        answer = _health(endpoints, request)
        if answer is None:
            answer = await asyncio.to_thread(respond, endpoints, request)
        await _write(writer, answer)
    except (ConnectionError, OSError):
        return
    finally:
        connections.release(client)
        writer.close()


def parse_listen(listen: str) -> tuple[str, int]:
    """`:8080` -> ('0.0.0.0', 8080); `127.0.0.1:0` -> an ephemeral port on loopback."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--listen {listen!r} is not HOST:PORT (for example :8080 or "
                          "127.0.0.1:8080)")
    return host or "0.0.0.0", int(port)


class EndpointServer:
    """The endpoints on their own event loop, in a daemon thread."""

    def __init__(self, listen: tuple[str, int], endpoints: LoopEndpoints):
        host, port = listen
        try:
            self._socket = socket.create_server((host, port), backlog=128)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port} (--listen): "
                              f"{exc.strerror or exc}") from None
        self._endpoints = endpoints
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="gitgate-endpoints")

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        connections = _Connections()
        server = self._loop.run_until_complete(asyncio.start_server(
            lambda r, w: _serve(self._endpoints, connections, r, w), sock=self._socket,
            limit=MAX_HEADER_BYTES))
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:  # connections still open are ended, each closing its socket
            server.close()
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

    def start(self) -> EndpointServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        else:
            self._socket.close()
