"""Serve an ApiState over HTTP on loopback, for the real kubernetes client."""

from __future__ import annotations

import base64
import json
import queue
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson

from tests.kubeapi.store import ApiState, Encoded, Watcher
from tests.support.shared_data import karmada_crds_dir

# kube-apiserver's limit on a request's body (its MaxRequestBodyBytes, 3 MiB): a longer one
# is answered 413 before it is read, and the connection closed (seen on the harness)
MAX_REQUEST_BYTES = 3 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # keep-alive answers go out at once, not after 40 ms
    state: ApiState
    requests_here = 0  # the requests that came on this handler's connection

    def setup(self) -> None:
        """Over TLS, the handshake in this connection's own thread; the client certificate it
        presented, if any, is noted by its common name (`ApiState.tls_clients`)."""
        super().setup()
        self.server.state.connections_opened += 1
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()
            subject = dict(pair[0] for pair in (self.connection.getpeercert() or {}).get(
                "subject", ()))
            if subject.get("commonName"):
                self.server.state.tls_clients.append(subject["commonName"])

    def finish(self) -> None:
        super().finish()
        self.connection.close()  # before it is counted: a client may wait for the count
        self.server.state.connections_closed += 1

    def _serve(self) -> None:
        self.requests_here += 1
        state = self.server.state
        if state.close_every_request or (self.requests_here > 1 and state.close_when_reused):
            state.requests_unanswered += 1  # a server's idle timeout running
            self.close_connection = True  # out as the request came: closed, no answer
            return
        # read when the request came, so a test that sets it after an answer was read finds
        # the connection that carried it open
        drop_after_answer = self.server.state.drop_kept_alive
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BYTES:  # answered unread, and closed, as kube-apiserver does
            self._send_json(413, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Failure", "reason": "RequestEntityTooLarge",
                                  "message": "Request entity too large: limit is "
                                             f"{MAX_REQUEST_BYTES}", "code": 413})
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        for raw in list(state.raw_answers):
            writer = raw(self.command, self.path, headers)
            if writer is not None:
                self.close_connection = True
                writer(self._write_raw)
                return
        status, payload = self.server.state.handle(self.command, self.path, headers, body)
        if isinstance(payload, Watcher):
            self._stream(payload)
            return
        if isinstance(payload, Encoded):
            self._send(status, payload.data, "application/json")
        elif isinstance(payload, str):
            self._send(status, payload.encode(), "text/plain; charset=utf-8")
        else:
            self._send_json(status, payload)
        if drop_after_answer:  # a server that closes an idle connection
            self.close_connection = True  # unannounced: no `Connection: close`

    def _write_raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def _send_json(self, status: int, payload: object) -> None:
        self._send(status, orjson.dumps(payload), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, watcher: Watcher) -> None:
        """A watch's answer: chunks of one JSON event per line, until its deadline or until
        the emulator stops (as an API server that shuts down ends its watches)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while (left := watcher.deadline - time.monotonic()) > 0 and \
                    not self.server.stopping.is_set():  # type: ignore[attr-defined]
                try:
                    event = watcher.events.get(timeout=min(left, 0.5))
                except queue.Empty:
                    continue
                line = orjson.dumps(event) + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            while not watcher.events.empty():  # what was due when it ended (an ERROR event)
                line = orjson.dumps(watcher.events.get_nowait()) + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away
        finally:
            watcher.closed = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: object) -> None:  # quiet test output
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ApiState, tls: ssl.SSLContext | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.tls = tls
        self.stopping = threading.Event()  # ends the watches being served

    def get_request(self) -> tuple[object, object]:
        sock, address = super().get_request()
        if self.tls is None:
            return sock, address
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away mid-answer (a watch it stopped reading) is not an error
        of the server's; anything else is printed, as the standard server does."""
        if isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            return  # or a client that refused the emulator's certificate
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class KubeApiEmulator:
    """`with KubeApiEmulator() as api:` serves on http://127.0.0.1:<port>; `api.state` holds
    objects, the request log and fault hooks."""

    def __init__(self, *, karmada: bool = True, crd_establish_delay: float = 0.05,
                 tls: ssl.SSLContext | None = None):
        """`tls`: the server's TLS context, to serve https (its certificate for 127.0.0.1)."""
        self.state = ApiState(crd_establish_delay)
        if karmada:
            self.install_karmada_crds()
        self._server = _Server(self.state, tls)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def install_karmada_crds(self) -> None:
        from ruamel.yaml import YAML
        for file in sorted(karmada_crds_dir().glob("policy.karmada.io_*.yaml")):
            self.state.install_crd(YAML(typ="safe").load(file.read_text()))
        self.state.serve_karmada_bindings()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{'https' if self._server.tls else 'http'}://{host}:{port}"

    def write_kubeconfig(self, path: Path, *, cluster: dict[str, object] | None = None,
                         user: dict[str, object] | None = None) -> Path:
        """A kubeconfig for the emulator; `cluster` and `user` add to (or replace) what its
        entries say: a certificate authority, a client certificate, a token."""
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url,
                                                          **(cluster or {})}}],
            "users": [{"name": "tester", "user": {"token": "test-token-not-secret",
                                                  **(user or {})}}],
            "contexts": [{"name": "emulator",
                          "context": {"cluster": "emulator", "user": "tester"}}],
        }))
        return path

    @staticmethod
    def pem_data(pem: bytes) -> str:
        """PEM bytes as a kubeconfig's `*-data` field holds them."""
        return base64.b64encode(pem).decode()

    def __enter__(self) -> KubeApiEmulator:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
