"""A real Prometheus (Debian's `prometheus` server, a process each test starts and stops)
scraping a small local exporter whose request counters the test sets: `http_requests_total`
by member cluster and status code, so an error-rate query gives what the test says."""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.support.chartservers import free_port

SCRAPE = "500ms"
ERROR_RATE = ('sum(http_requests_total{app="web",code=~"5..",cluster="{{cluster}}"}) / '
              'sum(http_requests_total{app="web",cluster="{{cluster}}"})')


def prometheus_binary() -> str:
    found = shutil.which("prometheus") or str(Path(sys.executable).parent / "prometheus")
    if not Path(found).is_file():
        pytest.skip("prometheus is not installed: `make setup` fetches it from Debian's "
                    "prometheus package (tools/install_promtool.py); without apt-get and "
                    "dpkg-deb the rollout analysis tests cannot run")
    return found


class Exporter:
    """`/metrics` in the text format: the counters in `requests` ((cluster, code) -> n)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()
        self.port = free_port()
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                body = exporter.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)  # a scrape cut short as Prometheus stops

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def error_rate(self, cluster: str, errors: int, total: int) -> None:
        with self.lock:
            self.requests[(cluster, "500")] = errors
            self.requests[(cluster, "200")] = total - errors

    def text(self) -> str:
        with self.lock:
            lines = ["# TYPE http_requests_total counter"] + [
                f'http_requests_total{{app="web",cluster="{c}",code="{k}"}} {n}'
                for (c, k), n in sorted(self.requests.items())]
        return "\n".join(lines) + "\n"

    def __enter__(self) -> Exporter:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class Prometheus:
    """The server on a free port, scraping `exporter` every SCRAPE."""

    def __init__(self, folder: Path, exporter: Exporter) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = folder / "prometheus.yml"
        self.config.write_text(
            f"global: {{scrape_interval: {SCRAPE}, evaluation_interval: {SCRAPE}}}\n"
            "scrape_configs:\n"
            "  - job_name: web\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{exporter.port}']}}]\n")
        self.data = folder / "data"
        self.log_file = folder / "prometheus.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def __enter__(self) -> Prometheus:
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                [prometheus_binary(), f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.data}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus stopped: {self.log[-2000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(
                    f"{self.url}/-/ready", timeout=1) as answer:
                if answer.status == 200:
                    return self
            time.sleep(0.1)
        self.__exit__()
        raise AssertionError(f"prometheus did not start: {self.log[-2000:]}")

    def __exit__(self, *_: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def query(self, promql: str) -> list[float]:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as answer:
            data = json.loads(answer.read())
        return [float(s["value"][1]) for s in data["data"]["result"]]

    def wait_for(self, promql: str, value: float, timeout: float = 30.0) -> None:
        """Until the query gives `value` (a scrape has taken what the exporter now says)."""
        deadline = time.monotonic() + timeout
        seen: list[float] = []
        while time.monotonic() < deadline:
            seen = self.query(promql)
            if seen and abs(seen[0] - value) < 1e-9:
                return
            time.sleep(0.1)
        raise AssertionError(f"{promql} gave {seen}, not {value}, within {timeout}s")
