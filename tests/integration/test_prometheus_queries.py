"""The instant-query client over real HTTP, against a server that answers what each test
says: values of a vector or a scalar, and every way an answer can say nothing usable (an
error envelope, a redirect, an answer past the size cap or the deadline, no server) ends as
a Sample with an error, never as values; the bearer token goes with each query, and each
query is counted for the metric."""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator

import pytest

from gitgate.model.analysisspec import Provider
from gitgate.prometheus.instant import InstantQueries
from gitgate.status.metrics import LoopMetrics
from tests.support.http import free_port

pytestmark = pytest.mark.integration


class Server:
    """Answers `answer` (status, headers, body) to every GET; keeps what it was asked."""

    def __init__(self) -> None:
        self.answer: tuple[int, dict[str, str], bytes] = (200, {}, b"{}")
        self.asked: list[tuple[str, str]] = []  # (query, Authorization)
        self.delay = 0.0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                owner.asked.append((query.get("query", [""])[0],
                                    self.headers.get("Authorization", "")))
                status, headers, body = owner.answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                half = len(body) // 2
                self.wfile.write(body[:half])
                self.wfile.flush()
                time.sleep(owner.delay)
                self.wfile.write(body[half:])

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def json(self, data: object, status: int = 200) -> None:
        self.answer = (status, {"Content-Type": "application/json"}, json.dumps(data).encode())


@pytest.fixture
def server() -> Iterator[Server]:
    found = Server()
    found.thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()
    found.thread.join(5)


def vector(*values: str) -> dict[str, object]:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"cluster": f"m{i}"}, "value": [1.0, v]} for i, v in enumerate(values)]}}


def test_values_of_a_vector_and_a_scalar_with_the_token_sent(server, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    provider = Provider(server.url, "main", token_file=str(token))
    queries = InstantQueries()
    server.json(vector("0.25", "NaN"))
    sample = queries.measure(provider, 'sum(x{cluster="a\\"b"})')
    assert sample.error == "" and sample.values[0] == 0.25 and sample.values[1] != 0.25
    assert server.asked == [('sum(x{cluster="a\\"b"})', "Bearer s3cret")]
    server.json({"status": "success", "data": {"resultType": "scalar", "result": [1, "3"]}})
    assert queries.measure(provider, "scalar(1)").values == (3.0,)


@pytest.mark.parametrize(("answer", "said"), [
    ((400, {}, json.dumps({"status": "error", "errorType": "bad_data",
                           "error": "parse error"}).encode()), "main: bad_data: parse error"),
    ((302, {"Location": "http://elsewhere/"}, b""), "main: answered a redirect (302)"),
    ((200, {}, b"<html>"), "main: answered 200 without JSON"),
    ((200, {"Content-Encoding": "gzip"}, b"x"), "main: answered with a content encoding"),
    ((200, {}, json.dumps({"status": "success", "data": {
        "resultType": "matrix", "result": []}}).encode()), "main: answered a matrix"),
    ((200, {}, b"{" + b" " * 5000 + b"}"), "main: answered more than 1000 bytes"),
])
def test_an_answer_that_says_nothing_usable_is_an_error(server, answer, said):
    server.answer = answer
    sample = InstantQueries(max_bytes=1000).measure(Provider(server.url, "main"), "up")
    assert sample.values == () and sample.error.startswith(said)


def test_an_answer_past_the_deadline_is_an_error(server):
    server.json(vector("0.1"))
    server.delay = 1.5
    sample = InstantQueries(deadline_s=0.5).measure(Provider(server.url, "main"), "up")
    assert sample.values == () and "main" in sample.error


def test_no_server_is_an_error_and_each_query_is_counted():
    metrics = LoopMetrics()
    queries = InstantQueries()
    queries.observer = metrics.analysis_query
    sample = queries.measure(Provider(f"http://127.0.0.1:{free_port()}", "main"), "up")
    assert sample.error.startswith("main cannot be reached")
    assert metrics.registry.get_sample_value(
        "gitgate_analysis_queries_total", {"provider": "main", "result": "error"}) == 1
