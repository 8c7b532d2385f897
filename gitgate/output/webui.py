"""The web page's routes under `/ui/`, its optional token, and where its state comes from: a
running loop's published snapshot (`gitgate run`) or the API server (`gitgate ui`).

With a token, every page asks for it: `Authorization: Bearer <token>` (for scripts and
proxies), or the sign-in form, which sets a signed, expiring session cookie (HttpOnly,
SameSite=Strict, Secure with `--ui-secure-cookies`; `endpoints.signin`). Wrong tokens are
counted per client address (`Throttle`); a right token always gets in. The style sheet and
script carry no state and are served to anyone. Every HTML answer forbids inline script,
framing and any origin but gitgate's own (Content-Security-Policy)."""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply.inventory import Inventory
from gitgate.endpoints.signin import FixedToken, Sessions, Throttle
from gitgate.errors import GitgateError
from gitgate.karmada.dispatch import Dispatch
from gitgate.model import Verdict
from gitgate.output.statusviews import provenance_lines
from gitgate.output.webassets import ICON, SCRIPT, STYLE
from gitgate.output.webgates import gates_page
from gitgate.output.weblayout import Filters, Snapshot, e, layout, login_page, missing_page
from gitgate.output.webpages import bundle_page, overview_page
from gitgate.output.webrollouts import rollouts_page
from gitgate.passes.onepass import RecordCache
from gitgate.passes.recorded import (
    BundleEvent,
    bundle_events,
    provenance_document,
    read_document,
    read_parts,
    recorded_status,
)
from gitgate.status.overview import merged_overview
from gitgate.status.published import Published

HTML = "text/html; charset=utf-8"
log = logging.getLogger("gitgate")
COOKIE = "gitgate_ui"
_SECURITY = {"Content-Security-Policy":
             "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
             "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
             "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
             "Cache-Control": "no-store"}
_ASSET = {"Cache-Control": "max-age=300"}


class TokenSource(Protocol):
    def current(self) -> bytes | None: ...


@dataclass(frozen=True)
class StateSource:
    """Where the pages read from: a snapshot now, and a bundle's events."""

    snapshot: Callable[[], Snapshot]
    events: Callable[[Inventory], list[BundleEvent]]


def _html(status: int, body: str, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status, {**_SECURITY, **(headers or {})}, media_type=HTML)


class WebUi:
    """The page's routes (`routes`), guarded by `token` when one is given: bytes, or a
    `TokenSource` such as `endpoints.signin.TokenFile`."""

    def __init__(self, source: StateSource, token: bytes | TokenSource | None = None, *,
                 throttle: Throttle | None = None, sessions: Sessions | None = None,
                 secure_cookies: bool = False):
        self.source = source
        self.token: TokenSource | None = (FixedToken(token) if isinstance(token, bytes)
                                          else token) if token else None
        self.throttle = throttle or Throttle()
        self.sessions = sessions or Sessions()
        self.secure_cookies = secure_cookies

    def routes(self) -> list[BaseRoute]:
        return [Route("/", self._home), Route("/ui", self._home),
                Route("/ui/app.css", self._style), Route("/ui/app.js", self._script),
                Route("/favicon.ico", self._icon),
                Route("/ui/login", self._login, methods=["GET", "POST"]),
                Route("/ui/{rest:path}", self._page)]

    # ------------------------------------------------------------------ plain answers
    async def _home(self, request: Request) -> Response:
        return RedirectResponse("/ui/", 302)

    async def _style(self, request: Request) -> Response:
        return Response(STYLE, 200, _ASSET, media_type="text/css; charset=utf-8")

    async def _script(self, request: Request) -> Response:
        return Response(SCRIPT, 200, _ASSET, media_type="text/javascript; charset=utf-8")

    async def _icon(self, request: Request) -> Response:
        return Response(ICON, 200, _ASSET, media_type="image/svg+xml")

    @staticmethod
    def _sign_in_form(status: int, said: str = "") -> Response:
        return _html(status, login_page(said), {"WWW-Authenticate": 'Bearer realm="gitgate"'})

    # ------------------------------------------------------------------ auth
    def _right(self, given: str) -> bool:
        token = self.token.current() if self.token is not None else None
        return token is not None and hmac.compare_digest(given.strip().encode(), token)

    async def _wrong(self, request: Request, answer: Response) -> Response:
        """A wrong token: `answer`, or past the address's share this minute a 429, late."""
        if not self.throttle.failed(request.client.host if request.client else "?"):
            return answer
        await asyncio.sleep(self.throttle.delay)
        return PlainTextResponse("too many wrong tokens from this address: try again in a "
                                 "minute\n", 429, {"Retry-After": "60"})

    async def _refused(self, request: Request) -> Response | None:
        """None when the request may read the page, else the answer."""
        if self.token is None:
            return None
        bearer = request.headers.get("authorization", "")
        if bearer.startswith("Bearer "):
            if self._right(bearer.removeprefix("Bearer ")):
                return None
            return await self._wrong(request, self._sign_in_form(401))
        token = self.token.current()
        cookie = request.cookies.get(COOKIE, "")
        if cookie and token is not None and self.sessions.valid(cookie, token):
            return None
        return self._sign_in_form(401)

    async def _login(self, request: Request) -> Response:
        if request.method != "POST":
            return self._sign_in_form(200)
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        given = form.get("token", [""])[0]
        token = self.token.current() if self.token is not None else None
        if token is None or not self._right(given):
            return await self._wrong(request, self._sign_in_form(
                401, "That token is not the one gitgate was given."))
        cookie = (f"{COOKIE}={self.sessions.issue(token)}; Path=/ui; "
                  f"Max-Age={self.sessions.max_age}; HttpOnly; SameSite=Strict"
                  + ("; Secure" if self.secure_cookies else ""))
        return _html(303, "", {"Location": "/ui/", "Set-Cookie": cookie})

    # ------------------------------------------------------------------ pages
    async def _page(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return PlainTextResponse("method not allowed: the page only reads\n", 405)
        refused = await self._refused(request)
        if refused is not None:
            return refused
        return await run_in_threadpool(self._render, request.scope["path"],
                                       request.scope["query_string"].decode("latin-1"))

    def _render(self, path: str, query: str) -> Response:
        try:
            try:
                snap = self.source.snapshot()
            except GitgateError as exc:  # the API server cannot be read: said, tried again
                return _html(503, _unreadable(exc.message))
            status, body = self.page(snap, path, query)
            return _html(status, body)
        except Exception:  # a bug in a page: said in the log, never half a page
            log.exception("the web page %s failed", path, extra={"event": "ui"})
            return PlainTextResponse("the page failed: see gitgate's log\n", 500)

    def page(self, snap: Snapshot, path: str, query: str) -> tuple[int, str]:
        """The HTTP status and the page: 404 for a bundle or a page that does not exist."""
        if path == "/ui/":
            return 200, overview_page(snap, Filters.of(parse_qs(query)))
        if path == "/ui/gates":
            return 200, gates_page(snap)
        if path == "/ui/rollouts":
            return 200, rollouts_page(snap)
        if path.startswith("/ui/bundles/"):
            name = path.removeprefix("/ui/bundles/")
            found = next((i for i in snap.inventories if i.bundle == name), None)
            if found is None:
                return 404, missing_page(snap, name)
            return 200, bundle_page(snap, found, self.source.events(found))
        return 404, missing_page(snap, path, "page")


def _unreadable(message: str) -> str:
    snap = Snapshot(now=datetime.now(UTC), inventories=(), dispatch={}, overview={},
                    origin="the API server", problems=(f"cannot read gitgate's records: "
                                                       f"{message}",))
    return layout("Unavailable", f"<p>{e('The page will try again.')}</p>", snap, "")


# ------------------------------------------------------------------ sources
def published_snapshot(seen: Published, now: datetime, refresh_seconds: int) -> Snapshot:
    """The page of a loop that leads and plans every bundle: what its last turn published
    (one pass and the read of Karmada after it, never a pass half-way)."""
    problems = [f"last pass: {seen.last_error}"] if seen.last_error else []
    if seen.observe_error:
        problems.append(seen.observe_error)
    problems += provenance_lines(provenance_document(
        seen.signature, seen.gate_report, seen.revision))
    return Snapshot(
        now=now, inventories=tuple(seen.inventories.values()), dispatch=seen.dispatch,
        overview=seen.overview, origin=seen.origin, revision=seen.revision or "",
        problems=tuple(problems), refresh_seconds=refresh_seconds,
        verdicts={bundle: str(Verdict.FAILED) for bundle in seen.failed})


def loop_source(published: Callable[[], Published], standby: ApiSource,
                refresh_seconds: int) -> StateSource:
    """`gitgate run`: the leader shows what its last turn published (`published()`), with no
    request to anyone (a bundle's events are read when its page is asked for). A standby (a
    replica behind the Service that does not hold the Lease) has planned nothing, and a
    replica of `--shard` plans only its share: they show the records the loop keeps on the
    API server (`standby`), as `gitgate ui` does."""

    def snapshot() -> Snapshot:
        seen = published()
        if not seen.leading:
            return replace(standby.snapshot(), origin=f"{seen.origin}; this replica stands "
                                                      "by, so this is what the leader recorded")
        if seen.sharded:  # this replica plans its share: show them all
            return replace(standby.snapshot(), origin=f"{seen.origin}; what every replica "
                                                      "recorded (--shard)")
        return published_snapshot(seen, standby.clock(), refresh_seconds)

    return StateSource(snapshot, standby.events)


class ApiSource:
    """`gitgate ui --kubeconfig`: the records a loop left on the API server, read at most
    once per `fresh_for` seconds however many pages ask (several tabs polling cost one
    read)."""

    def __init__(self, cluster: ClusterPort, instance: str, clock: Callable[[], datetime],
                 origin: str, refresh_seconds: int, fresh_for: float = 2.0,
                 records: RecordCache | None = None):
        self.cluster, self.instance, self.clock = cluster, instance, clock
        self.records = records  # a running loop's records' cache
        self.origin, self.refresh_seconds, self.fresh_for = origin, refresh_seconds, fresh_for
        self._lock = threading.Lock()
        self._read: tuple[float, Snapshot] | None = None

    def snapshot(self) -> Snapshot:
        with self._lock:
            if self._read is not None and time.monotonic() - self._read[0] < self.fresh_for:
                return self._read[1]
            recorded = recorded_status(self.cluster, self.instance, self.records)
            problems = [recorded.observation.error] if recorded.observation.error else []
            problems += provenance_lines(recorded.provenance or {})
            dispatch: dict[str, Dispatch] = dict(recorded.observation.bundles)
            parts = read_parts(self.cluster, self.instance, "overview")
            snap = Snapshot(
                now=self.clock(), inventories=tuple(recorded.inventories), dispatch=dispatch,
                overview=(merged_overview(parts, recorded.shards.owner)
                          if parts and recorded.shards is not None else
                          read_document(self.cluster, self.instance, "overview") or {}),
                origin=self.origin, problems=tuple(problems),
                refresh_seconds=self.refresh_seconds)
            self._read = (time.monotonic(), snap)
            return snap

    def events(self, record: Inventory) -> list[BundleEvent]:
        """A bundle's events, read when its page is asked for."""
        return bundle_events(self.cluster, record)

    def as_source(self) -> StateSource:
        return StateSource(self.snapshot, self.events)
