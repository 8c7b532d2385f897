"""Every exchange with the API server, bounded: the one HTTP stack gitgate speaks, urllib3's,
through the official client's own pool manager (so the kubeconfig's TLS, client
certificates and proxies apply as the official client applies them).

`BoundedPool` takes the place of `api.rest_client.pool_manager`, so the official client's
generated APIs (the leader Lease's) are bounded as the transport's own requests are. Each
request has a deadline for the whole exchange (`deadlines`), an answer it reads up to
`Timeouts.max_answer` bytes (a watch: one event), headers within `http.client`'s limits
(65,536 bytes a line, 100 headers), no content encoding it did not ask for (it asks for
`identity`, and never decodes), and no redirect followed (`RedirectRefused`). urllib3 never
retries: the transport's RetryPolicy is the only one, but for a request that went out on a
kept-alive connection the server had closed as it came (sent again once at once, as Go's
client does; never a POST, whose server may have acted)."""

from __future__ import annotations

import http.client
import io
import re
import ssl
import threading
from collections.abc import Generator, Iterator
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import urllib3

from gitgate.apiserver import deadlines
from gitgate.apiserver.apierrors import (
    AnswerTooLarge,
    RedirectRefused,
    Timeouts,
    answer_too_large,
    deadline_passed,
    display_url,
    encoding_refused,
    event_too_large,
    malformed_answer,
    verb_and_resource,
)
from gitgate.errors import KubeError

_READ_SIZE = 65536
IDENTITY = {"Accept-Encoding": "identity"}

# how a kept-alive connection the server closed fails a request before any byte of an answer
_UNANSWERED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
               ConnectionAbortedError, ssl.SSLEOFError, ssl.SSLZeroReturnError)


_NO_RETRY = urllib3.Retry(total=False, redirect=False)
# a request target urllib3 sends as it is (`parse_url` would encode nothing and normalize
# nothing in it): RFC 3986's characters, upper-case percent escapes, no dot segment
_PLAIN_TARGET = re.compile(r"/(?:[A-Za-z0-9\-_~!$&'()*+,;=:@/?]|\.(?![./?]|$)|%[0-9A-F]{2})*")


class _OneWrite:
    """A connection that sends a request's line, headers and body in one write: the server
    reads each request in one go (two writes cost kube-apiserver more, bench/results/history.md)."""

    gitgate_body: bytes | None = None

    def request(self, method: str, url: str, body: Any = None, headers: Any = None,
                **kwargs: Any) -> None:
        if isinstance(body, bytes) and body:
            headers = {**(headers or {}), "Content-Length": str(len(body))}
            self.gitgate_body, body = body, None
        super().request(method, url, body, headers, **kwargs)  # type: ignore[misc]

    def send(self, data: Any) -> None:
        body, self.gitgate_body = self.gitgate_body, None
        super().send(data + body if body is not None else data)  # type: ignore[misc]


class Answer(NamedTuple):
    status: int
    reason: str
    data: bytes
    headers: Any  # urllib3's HTTPHeaderDict


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        current = todo.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__, *current.args]


def _unanswered(exc: BaseException) -> bool:
    return any(isinstance(e, _UNANSWERED) for e in _causes(exc))


def _headers_beyond_limits(exc: BaseException) -> bool:
    return any(isinstance(e, http.client.LineTooLong)
               or (isinstance(e, http.client.HTTPException) and "got more than" in str(e))
               for e in _causes(exc))


def what_of(method: str, url: str) -> str:
    """A request in a user's words: `list bundles.gitgate.io in namespace x`."""
    verb, resource = verb_and_resource(method, urlsplit(url).path)
    return f"{verb} {resource}"


class BoundedPool:
    """`api.rest_client.pool_manager`, bounded (see the module). Safe to share between
    threads, as urllib3's pool manager it wraps is."""

    def __init__(self, inner: Any, timeouts: Timeouts, server: str) -> None:
        deadlines.guard(inner, (_OneWrite,))
        self.inner = inner
        self.timeouts = timeouts
        self.server = server
        self.resent = 0  # requests sent again at once (see the module)
        self._lock = threading.Lock()
        self._timeouts: dict[tuple[float, float], urllib3.Timeout] = {}
        self._pools: dict[str, Any] = {}  # urllib3's connection pool, by scheme://host:port

    def _pool_and_target(self, url: str) -> tuple[Any, str] | None:
        """The connection pool of `url`'s server, taken from the manager once per server (not
        looked up again by the parsed URL on every request), and the request's target. None
        where the manager's own path must send it: a proxy's manager, a target urllib3
        would rewrite."""
        if type(self.inner) is not urllib3.PoolManager:
            return None
        start = url.find("://")
        cut = url.find("/", start + 3) if start > 0 else -1
        if cut < 0 or not _PLAIN_TARGET.fullmatch(url, cut):
            return None
        server = url[:cut]
        pool = self._pools.get(server)
        if pool is None:
            pool = self.inner.connection_from_url(server)
            with self._lock:
                self._pools[server] = pool
        return pool, url[cut:]

    # ------------------------------------------------------------------ the transport's
    def exchange(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                 timeouts: Timeouts | None = None) -> Answer:
        """One request and its whole answer, within `timeouts` (the pool's by default).
        Raises KubeError for what it refuses (RedirectRefused, AnswerTooLarge,
        AnswerRefused, the deadline), urllib3's or the socket's errors for no answer."""
        bounds = timeouts or self.timeouts
        deadline = deadlines.WATCHDOG.start(bounds.read)
        try:
            return self._exchange(method, url, body, headers, bounds, deadline)
        finally:
            deadlines.WATCHDOG.stop(deadline)

    def _exchange(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                  bounds: Timeouts, deadline: deadlines.Deadline) -> Answer:
        for attempt in (1, 2):
            try:
                response = self._open(method, url, body, headers, bounds, deadline)
                break
            except KubeError:
                raise
            except Exception as exc:
                if deadline.expired:
                    raise deadline_passed(what_of(method, url), self.server,
                                          bounds.read) from None
                if _headers_beyond_limits(exc):
                    raise AnswerTooLarge(
                        f"{what_of(method, url)}: the answer from {self.server} has headers "
                        "beyond what gitgate reads (65,536 bytes a line, 100 headers)") from None
                if attempt == 2 or method == "POST" or not deadline.reused or not _unanswered(
                        exc):
                    raise
                with self._lock:
                    self.resent += 1
        try:
            data = self._body(response, method, url, bounds)
        except KubeError:
            response.close()
            raise
        except Exception:
            response.close()
            if deadline.expired:
                raise deadline_passed(what_of(method, url), self.server, bounds.read) from None
            raise
        if deadline.expired:  # the cut may end a read short without an error
            raise deadline_passed(what_of(method, url), self.server, bounds.read)
        return Answer(response.status, response.reason or "", data, response.headers)

    def _open(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
              bounds: Timeouts, deadline: deadlines.Deadline, read: float = 0.0) -> Any:
        """The request sent and its answer's headers read and checked: no redirect, no
        encoding. `read`: seconds one read may wait (the request timeout by default)."""
        sent = {**headers, **IDENTITY}
        key = (bounds.connect, read or bounds.read)
        timeout = self._timeouts.get(key)
        if timeout is None:
            timeout = self._timeouts[key] = urllib3.Timeout(connect=key[0], read=key[1])
        direct = self._pool_and_target(url)
        with deadline.during():
            if direct is None:
                response = self.inner.urlopen(
                    method, url, body=body, headers=sent, redirect=False, retries=_NO_RETRY,
                    preload_content=False, decode_content=False, timeout=timeout)
            else:  # as the manager sends it (`PoolManager.urlopen`), without its look-up
                response = direct[0].urlopen(
                    method, direct[1], body=body, headers=sent, redirect=False,
                    assert_same_host=False, retries=_NO_RETRY, preload_content=False,
                    decode_content=False, timeout=timeout)
        if 300 <= response.status < 400:
            response.close()
            raise RedirectRefused(what_of(method, url), self.server, response.status,
                                  response.headers.get("Location", ""))
        encoding = response.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            response.close()
            raise encoding_refused(what_of(method, url), self.server, encoding)
        length = response.headers.get("Content-Length", "")
        if response.status < 200 or (length and not length.strip().isdigit()
                                     and not response.chunked):
            response.close()
            raise malformed_answer(what_of(method, url), self.server, (
                f"status {response.status}" if response.status < 200 else
                f"Content-Length {length!r}"))
        return response

    def _body(self, response: Any, method: str, url: str, bounds: Timeouts) -> bytes:
        """The answer's body, read whole but never past the cap."""
        limit = bounds.max_answer
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and not response.chunked:  # chunks: their own lengths count
            if int(length) > limit:
                raise answer_too_large(what_of(method, url), self.server, limit)
            data: bytes = response.read()
            return data
        parts, size = [], 0
        while chunk := response.read1(_READ_SIZE):
            size += len(chunk)
            if size > limit:
                raise answer_too_large(what_of(method, url), self.server, limit)
            parts.append(chunk)
        return b"".join(parts)

    def stream_lines(self, url: str, headers: dict[str, str], seconds: float,
                     timeouts: Timeouts | None = None) -> Generator[bytes, None, None]:
        """The lines of a streamed GET (a watch), as they come, for at most `seconds` plus
        the request timeout; no line longer than the answer cap. Raises KubeError when it
        is refused (its status), cut or too long; urllib3's errors when it breaks."""
        bounds = timeouts or self.timeouts
        what = what_of("GET", url).replace("list ", "watch ", 1)
        deadline = deadlines.WATCHDOG.start(seconds + bounds.read)
        response = None
        whole = False
        try:
            try:
                response = self._open("GET", url, None, headers, bounds, deadline,
                                      read=seconds + bounds.read)
            except KubeError:
                raise
            except Exception:
                if deadline.expired:
                    raise deadline_passed(what, self.server, seconds + bounds.read) from None
                raise
            if response.status >= 300:
                text = self._body(response, "GET", url, bounds).decode("utf-8", "replace")
                raise KubeError(f"{what} refused ({response.status}): {text[:200]}",
                                status=response.status)
            pending = b""
            while chunk := self._read_stream(response, what, deadline, seconds + bounds.read):
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                if len(pending) > bounds.max_answer:
                    raise event_too_large(what, self.server, bounds.max_answer)
                for line in lines:
                    if len(line) > bounds.max_answer:
                        raise event_too_large(what, self.server, bounds.max_answer)
                    if line.strip():
                        yield line
            if deadline.expired:
                raise deadline_passed(what, self.server, seconds + bounds.read)
            if pending.strip():
                yield pending
            whole = True
        finally:
            deadlines.WATCHDOG.stop(deadline)
            if response is not None:
                if whole:
                    response.release_conn()
                else:  # a stream left in the middle is no connection to reuse
                    response.close()

    def _read_stream(self, response: Any, what: str, deadline: deadlines.Deadline,
                     seconds: float) -> bytes:
        try:
            chunk: bytes = response.read1(_READ_SIZE)
            return chunk
        except Exception:
            if deadline.expired:
                raise deadline_passed(what, self.server, seconds) from None
            raise

    # ------------------------------------------------------------ the official client's
    def request(self, method: str, url: str, fields: Any = None, headers: Any = None,
                body: Any = None, timeout: Any = None, **_: Any) -> urllib3.HTTPResponse:
        """What the official client's REST client calls: the same bounded exchange, its
        answer handed back read whole (the client reads `.data`)."""
        if fields:
            raise ValueError("form fields are never sent to the API server")
        if isinstance(body, str):
            body = body.encode()
        bounds = self.timeouts
        if isinstance(timeout, urllib3.Timeout) and isinstance(timeout.read_timeout,
                                                               int | float):
            bounds = Timeouts(connect=bounds.connect, read=float(timeout.read_timeout),
                              max_answer=bounds.max_answer)
        answer = self.exchange(method.upper(), url, body, dict(headers or {}), bounds)
        return urllib3.HTTPResponse(body=io.BytesIO(answer.data), headers=answer.headers,
                                    status=answer.status, reason=answer.reason,
                                    preload_content=True, decode_content=False,
                                    request_url=url)

    def clear(self) -> None:
        self.inner.clear()

    def __getattr__(self, name: str) -> Any:  # the wrapped manager's settings
        if name == "inner":  # not set yet
            raise AttributeError(name)
        return getattr(self.inner, name)


def bounded_pool(api: Any, timeouts: Timeouts | None = None) -> BoundedPool:
    """The bounded pool of `api`'s REST client (shared by every client made from it),
    put in place of its pool manager the first time."""
    rest = api.rest_client
    with _INSTALL_LOCK:
        if not isinstance(rest.pool_manager, BoundedPool):
            rest.pool_manager = BoundedPool(rest.pool_manager, timeouts or Timeouts(),
                                            display_url(api.configuration.host))
        pool: BoundedPool = rest.pool_manager
        return pool


_INSTALL_LOCK = threading.Lock()
