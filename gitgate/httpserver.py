"""The loop's one small HTTP server: /healthz, /readyz, /metrics, /status, the Git webhook
(`POST /hooks/git`, accepted only with a valid X-Hub-Signature-256) and `POST /reconcile`
(a pass now, accepted only with `Authorization: Bearer <the webhook secret>`)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
                 leading: Callable[[], bool] = lambda: True):
        self.ready = ready
        self.status = status
        self.metrics = metrics
        self.trigger = trigger
        self.webhook_secret = webhook_secret
        # asks the loop for a pass now; returns how many passes had run before it
        self.request_pass = request_pass
        self.leading = leading


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    disable_nagle_algorithm = True
    timeout = 10  # seconds a connection may take to send its request: half-sent ones go away

    def _send(self, code: int, body: bytes, content_type: str = "text/plain; charset=utf-8"):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        endpoints = self.server.endpoints
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b"ok\n")
        elif path == "/readyz":
            ready = endpoints.ready()
            self._send(200 if ready else 503, b"ready\n" if ready else b"not ready\n")
        elif path == "/metrics":
            self._send(200, endpoints.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/status":
            self._send(200, json.dumps(endpoints.status(), indent=2).encode(),
                       "application/json")
        else:
            self._send(404, b"not found\n")

    def _body(self) -> bytes | None:
        """The request body, or None after answering 411/413 for a missing, negative or too
        large Content-Length (checked before a byte is read)."""
        raw = self.headers.get("Content-Length")
        try:
            length = int(raw) if raw is not None else 0
        except ValueError:
            length = -1
        if length < 0:
            self._send(400, b"bad Content-Length\n")
            return None
        if length > MAX_HOOK_BODY:
            self._send(413, b"payload too large\n")
            return None
        return self.rfile.read(length)

    def do_POST(self) -> None:
        endpoints = self.server.endpoints
        path = self.path.split("?", 1)[0]
        if path not in ("/hooks/git", "/reconcile"):
            self._send(404, b"not found\n")
            return
        body = self._body()
        if body is None:
            return
        if not endpoints.webhook_secret:
            self._send(403, f"{path} disabled: start gitgate with --webhook-secret-file\n"
                       .encode())
        elif path == "/reconcile":
            self._reconcile(endpoints)
        elif not valid_signature(endpoints.webhook_secret, body,
                                 self.headers.get("X-Hub-Signature-256")):
            self._send(401, b"invalid signature\n")
        else:
            endpoints.trigger()
            self._send(202, b"fetch triggered\n")

    def _reconcile(self, endpoints: LoopEndpoints) -> None:
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if not (endpoints.webhook_secret
                and hmac.compare_digest(token.encode(), endpoints.webhook_secret)):
            self._send(401, b"unauthorized: send Authorization: Bearer <webhook secret>\n")
        elif not endpoints.leading() or endpoints.request_pass is None:
            self._send(503, b"standby: this replica does not lead; retry (another replica "
                            b"leads)\n")
        else:
            before = endpoints.request_pass()
            self._send(202, json.dumps({"accepted": True, "passesBefore": before}).encode(),
                       "application/json")

    def log_message(self, format: str, *args: object) -> None:
        return


MAX_CONNECTIONS = 32


class _Server(ThreadingHTTPServer):
    """At most MAX_CONNECTIONS connections are served at once; more are answered 503 and
    closed without a thread, so slow or half-sent requests cannot use up the process."""

    daemon_threads = True
    request_queue_size = 16

    def __init__(self, address: tuple[str, int], endpoints: LoopEndpoints):
        super().__init__(address, _Handler)
        self.endpoints = endpoints
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        if not self.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\n\r\n")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


def parse_listen(listen: str) -> tuple[str, int]:
    """`:8080` -> ('0.0.0.0', 8080); `127.0.0.1:0` -> an ephemeral port on loopback."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--listen {listen!r} is not HOST:PORT (for example :8080 or "
                          "127.0.0.1:8080)")
    return host or "0.0.0.0", int(port)


class EndpointServer:
    def __init__(self, listen: tuple[str, int], endpoints: LoopEndpoints):
        try:
            self._server = _Server(listen, endpoints)
        except OSError as exc:
            host, port = listen
            raise ConfigError(f"cannot listen on {host}:{port} (--listen): "
                              f"{exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> EndpointServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
