"""The endpoints served by uvicorn on their own event loop, in a daemon thread: a slow or
half-sent request costs a coroutine and a socket, never a thread, so health probes are
answered whatever else is connected. `stop` ends it from any thread (SIGTERM in `gitgate
run`), connections and worker threads included."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from gitgate.endpoints.connection import Limits, bounded_protocol
from gitgate.endpoints.routes import LoopEndpoints, endpoint_app
from gitgate.errors import ConfigError

KEEP_ALIVE_SECONDS = 5  # an idle kept-alive connection is closed after this
GRACE_SECONDS = 2  # on stop, how long answers under way may take to finish


def parse_listen(listen: str) -> tuple[str, int]:
    """`:8080` -> ('0.0.0.0', 8080); `127.0.0.1:0` -> an ephemeral port on loopback."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--listen {listen!r} is not HOST:PORT (for example :8080 or "
                          "127.0.0.1:8080)")
    return host or "0.0.0.0", int(port)


class EndpointServer:
    def __init__(self, listen: tuple[str, int], endpoints: LoopEndpoints,
                 limits: Limits | None = None):
        limits = limits or Limits()
        host, port = listen
        try:
            self._socket = socket.create_server((host, port), backlog=128)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port} (--listen): "
                              f"{exc.strerror or exc}") from None
        self._port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(
            endpoint_app(endpoints, limits), http=bounded_protocol(limits), ws="none",
            lifespan="off", loop="asyncio", log_config=None, log_level="warning",
            access_log=False, server_header=False, proxy_headers=False,
            timeout_keep_alive=KEEP_ALIVE_SECONDS, timeout_graceful_shutdown=GRACE_SECONDS)
        self._server = uvicorn.Server(config)
        self._stopped = False
        self._thread = threading.Thread(target=self._server.run, args=([self._socket],),
                                        daemon=True, name="gitgate-endpoints")

    @property
    def port(self) -> int:
        return self._port

    def start(self) -> EndpointServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and self._thread.is_alive() \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            self._server.should_exit = True
            self._thread.join(GRACE_SECONDS + 8)
        else:
            self._socket.close()
