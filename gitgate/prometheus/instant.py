"""The one way gitgate asks a Prometheus anything: an instant query (`GET /api/v1/query`)
to a provider `gitgate.yaml` lists, over urllib3 (gitgate's one HTTP stack) with a deadline
for the whole answer, a cap on its size, no content encoding, no redirect followed and no
retry. Whatever goes wrong becomes a `Sample` with an error, which the analysis counts as
a failure; nothing here raises."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import urllib3

from gitgate.model.analysisspec import Provider
from gitgate.progression.analysis import Sample

CONNECT_TIMEOUT_S = 5.0
DEADLINE_S = 15.0  # for one whole answer
MAX_ANSWER_BYTES = 1 << 20
MAX_TOKEN_BYTES = 16 << 10
_READ_SIZE = 1 << 16
_NO_RETRY = urllib3.Retry(total=False, redirect=False)

# (provider, result) after each query; result: "answered", "empty" or "error"
Observer = Callable[[str, str], None]


class AnswerError(Exception):
    """Why an answer says nothing usable (its text is the message)."""


class InstantQueries:
    """urllib3 pools by CA file. `clock`: monotonic seconds, for the deadline."""

    def __init__(self, *, deadline_s: float = DEADLINE_S, max_bytes: int = MAX_ANSWER_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._pools: dict[str | None, urllib3.PoolManager] = {}
        self._lock = threading.Lock()
        self._deadline_s = deadline_s
        self._max_bytes = max_bytes
        self._clock = clock
        self.observer: Observer | None = None

    def _pool(self, ca_file: str | None) -> urllib3.PoolManager:
        with self._lock:
            if ca_file not in self._pools:
                context = ssl.create_default_context(cafile=ca_file)
                self._pools[ca_file] = urllib3.PoolManager(
                    ssl_context=context, retries=_NO_RETRY, maxsize=4,
                    timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S,
                                            read=self._deadline_s))
            return self._pools[ca_file]

    def measure(self, provider: Provider, query: str) -> Sample:
        """The values the query gives now (an instant vector's series, or a scalar)."""
        try:
            values = self._query(provider, query)
            sample = Sample(values)
        except AnswerError as exc:
            sample = Sample(error=f"{provider.label}: {exc}")
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            sample = Sample(error=f"{provider.label} cannot be reached ({type(exc).__name__})")
        if self.observer is not None:
            self.observer(provider.label, "error" if sample.error else
                          "answered" if sample.values else "empty")
        return sample

    def _query(self, provider: Provider, query: str) -> tuple[float, ...]:
        headers = {"Accept-Encoding": "identity", "Accept": "application/json",
                   "User-Agent": "gitgate"}
        if provider.token_file is not None:
            headers["Authorization"] = f"Bearer {_token(provider.token_file)}"
        started = self._clock()
        response = self._pool(provider.ca_file).request(
            "GET", f"{provider.url}/api/v1/query", fields={"query": query}, headers=headers,
            preload_content=False, decode_content=False, redirect=False)
        try:
            body = self._body(response, started)
        finally:
            response.release_conn()
        if response.status in (301, 302, 303, 307, 308):
            raise AnswerError(f"answered a redirect ({response.status}), which is not followed")
        return values_of(response.status, body)

    def _body(self, response: Any, started: float) -> bytes:
        if response.headers.get("content-encoding", "identity") not in ("identity", ""):
            raise AnswerError("answered with a content encoding it was not asked for")
        chunks: list[bytes] = []
        size = 0
        while True:
            if self._clock() - started > self._deadline_s:
                raise AnswerError(f"did not answer within {self._deadline_s:g}s")
            chunk = response.read(_READ_SIZE)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > self._max_bytes:
                raise AnswerError(f"answered more than {self._max_bytes} bytes")
            chunks.append(chunk)


def _token(path: str) -> str:
    try:
        return Path(path).read_bytes()[:MAX_TOKEN_BYTES].decode().strip()
    except (OSError, UnicodeDecodeError):
        raise AnswerError(f"its token file {path} cannot be read") from None


def values_of(status: int, body: bytes) -> tuple[float, ...]:
    """The values in an answer of `/api/v1/query` (the HTTP API's JSON envelope)."""
    try:
        data = json.loads(body)
    except ValueError:
        raise AnswerError(f"answered {status} without JSON") from None
    if not isinstance(data, dict):
        raise AnswerError(f"answered {status} with JSON that is not the query API's")
    if data.get("status") != "success":
        kind = str(data.get("errorType") or status)
        raise AnswerError(f"{kind}: {str(data.get('error') or 'the query failed')[:300]}")
    result = data.get("data") or {}
    try:
        if result.get("resultType") == "scalar":
            return (float(result["result"][1]),)
        if result.get("resultType") == "vector":
            return tuple(float(series["value"][1]) for series in result["result"])
    except (KeyError, IndexError, TypeError, ValueError):
        raise AnswerError("answered a result it could not read") from None
    raise AnswerError(f"answered a {result.get('resultType')!s}: write a query that gives an "
                      "instant vector or a scalar")

