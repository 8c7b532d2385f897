"""The loop's one small HTTP server: /healthz, /readyz, /metrics, /status and the Git webhook
(`POST /hooks/git`, accepted only with a valid X-Hub-Signature-256)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
                 webhook_secret: bytes | None):
        self.ready = ready
        self.status = status
        self.metrics = metrics
        self.trigger = trigger
        self.webhook_secret = webhook_secret


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    disable_nagle_algorithm = True

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

    def do_POST(self) -> None:
        endpoints = self.server.endpoints
        if self.path.split("?", 1)[0] != "/hooks/git":
            self._send(404, b"not found\n")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_HOOK_BODY:
            self._send(413, b"payload too large\n")
            return
        body = self.rfile.read(length)
        if not endpoints.webhook_secret:
            self._send(403, b"webhook disabled: start gitgate with --webhook-secret-file\n")
        elif not valid_signature(endpoints.webhook_secret, body,
                                 self.headers.get("X-Hub-Signature-256")):
            self._send(401, b"invalid signature\n")
        else:
            endpoints.trigger()
            self._send(202, b"fetch triggered\n")

    def log_message(self, format: str, *args: object) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], endpoints: LoopEndpoints):
        super().__init__(address, _Handler)
        self.endpoints = endpoints


def parse_listen(listen: str) -> tuple[str, int]:
    """`:8080` -> ('0.0.0.0', 8080); `127.0.0.1:0` -> an ephemeral port on loopback."""
    host, _, port = listen.rpartition(":")
    return host or "0.0.0.0", int(port)


class EndpointServer:
    def __init__(self, listen: str, endpoints: LoopEndpoints):
        self._server = _Server(parse_listen(listen), endpoints)
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
