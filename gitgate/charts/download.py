"""The only way gitgate reaches a chart repository or registry: one GET at a time, over
HTTPS with the certificate checked (plain HTTP only to a loopback address), to a URL the
platform's allow-list lets the asking source reach (`ask`, checked before each request,
redirects included), with a time limit, a cap on the answer's size, no content encoding
and no proxy. A redirect is followed only
to an allowed URL, and credentials never go to another host than the one they are for."""

from __future__ import annotations

import base64
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import urllib3

from gitgate.errors import ChartError, Reason
from gitgate.model.chartspec import ChartRepository, is_chart_repository

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
DEADLINE_S = 120.0  # for one whole answer
MAX_REDIRECTS = 3
_NO_RETRY = urllib3.Retry(total=False, redirect=False)
_READ_SIZE = 1 << 16


@dataclass(frozen=True)
class Secret:
    """What a repository's credentials say: user and password, or a bearer token. Its text
    is never part of a message, a log line or a record (`repr` says nothing of it)."""

    username: str = ""
    password: str = ""
    token: str = ""

    def __repr__(self) -> str:
        return "Secret(...)"

    def header(self) -> str:
        if self.token:
            return f"Bearer {self.token}"
        pair = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode()


@dataclass(frozen=True)
class Answer:
    status: int
    data: bytes
    headers: dict[str, str]
    url: str  # where it came from, after redirects


Ask = Callable[[str], ChartRepository | None]  # the allow-list entry for a URL, or None


class Transport:
    """urllib3 pools by CA file; `requests` counts what went out (a pass that changed
    nothing sends none)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._pools: dict[str | None, urllib3.PoolManager] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self.requests = 0

    def _pool(self, ca_file: str | None) -> urllib3.PoolManager:
        with self._lock:
            if ca_file not in self._pools:
                context = ssl.create_default_context(cafile=ca_file)
                self._pools[ca_file] = urllib3.PoolManager(
                    ssl_context=context, retries=_NO_RETRY, maxsize=4,
                    timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S))
            return self._pools[ca_file]

    def get(self, url: str, ask: Ask, *, max_bytes: int, secret: Secret | None = None,
            accept: str | None = None, auth: str | None = None) -> Answer:
        """GET `url` (https, or http on loopback). `auth`: an Authorization header for this
        host only (else `secret`'s). Raises ChartError for a refused URL, an unreachable
        host, an answer over `max_bytes` or past the deadline."""
        first_host = urlsplit(url).netloc
        for _ in range(MAX_REDIRECTS + 1):
            entry = ask(url)
            if entry is None:
                raise ChartError(f"{_shown(url)} is not in gitgate.yaml's "
                                 "charts.repositories for this source: nothing is fetched "
                                 "from it", reason=Reason.CHART_NOT_ALLOWED)
            headers = {"Accept-Encoding": "identity", "User-Agent": "gitgate"}
            if accept:
                headers["Accept"] = accept
            if urlsplit(url).netloc == first_host:
                if auth:
                    headers["Authorization"] = auth
                elif secret is not None:
                    headers["Authorization"] = secret.header()
            answer = self._once(url, entry, headers, max_bytes)
            if answer.status in (301, 302, 303, 307, 308):
                location = answer.headers.get("location", "")
                if not location:
                    raise ChartError(f"{_shown(url)} answered a redirect without a Location",
                                     reason=Reason.CHART_FETCH_FAILED)
                url = urljoin(url, location)
                if not is_chart_repository(url):
                    raise ChartError(f"{_shown(url)}: a redirect away from https (or from "
                                     "loopback) is not followed",
                                     reason=Reason.CHART_FETCH_FAILED)
                continue
            return answer
        raise ChartError(f"{_shown(url)}: more than {MAX_REDIRECTS} redirects",
                         reason=Reason.CHART_FETCH_FAILED)

    def _once(self, url: str, entry: ChartRepository, headers: dict[str, str],
              max_bytes: int) -> Answer:
        self.requests += 1
        started = self._clock()
        try:
            response = self._pool(entry.ca_file).request(
                "GET", url, headers=headers, preload_content=False, decode_content=False,
                redirect=False, retries=_NO_RETRY)
        except (urllib3.exceptions.HTTPError, OSError, ssl.SSLError) as exc:
            raise ChartError(f"{_shown(url)} cannot be reached: {_said(exc)}",
                             reason=Reason.CHART_FETCH_FAILED) from None
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise ChartError(f"{_shown(url)} is {declared} bytes, more than the "
                                 f"{max_bytes} allowed (charts.maxSize)",
                                 reason=Reason.CHART_FETCH_FAILED)
            encoding = response.headers.get("content-encoding", "identity").lower()
            if encoding not in ("identity", ""):
                raise ChartError(f"{_shown(url)} answered in {encoding!r}, which gitgate did "
                                 "not ask for", reason=Reason.CHART_FETCH_FAILED)
            chunks, size = [], 0
            while block := response.read(_READ_SIZE):
                size += len(block)
                if size > max_bytes:
                    raise ChartError(f"{_shown(url)} is more than the {max_bytes} bytes "
                                     "allowed (charts.maxSize)",
                                     reason=Reason.CHART_FETCH_FAILED)
                if self._clock() - started > DEADLINE_S:
                    raise ChartError(f"{_shown(url)} took longer than {DEADLINE_S:g}s",
                                     reason=Reason.CHART_FETCH_FAILED)
                chunks.append(block)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ChartError(f"{_shown(url)} broke off: {_said(exc)}",
                             reason=Reason.CHART_FETCH_FAILED) from None
        finally:
            response.release_conn()
        return Answer(response.status, b"".join(chunks),
                      {k.lower(): v for k, v in response.headers.items()}, url)

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.clear()
            self._pools = {}


def _shown(url: str) -> str:
    """A URL as messages show it: no user information, query or fragment."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}" + (
        f":{parts.port}" if parts.port else "") + parts.path


def _said(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc.__class__.__name__)[:200]
