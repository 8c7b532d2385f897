"""The web page's routes under `/ui/`, its optional bearer token, and where its state comes
from: a running loop's memory (`gitgate run`) or the API server (`gitgate ui`).

With a token, every page asks for it: `Authorization: Bearer <token>` (for scripts and
proxies), or the sign-in form, which sets an HttpOnly, SameSite=Strict cookie holding an
HMAC of the token (never the token itself). The style sheet and script carry no state and
are served to anyone. Every HTML answer forbids inline script, framing and any origin but
gitgate's own (Content-Security-Policy)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, unquote

from gitgate.apply.inventory import Inventory
from gitgate.apply.ports import ClusterPort
from gitgate.errors import GitgateError
from gitgate.httpserver import TEXT, Answer, Request
from gitgate.karmada.dispatch import Dispatch
from gitgate.loop import Reconciler
from gitgate.model import Verdict
from gitgate.output.statusviews import provenance_lines
from gitgate.output.webassets import SCRIPT, STYLE
from gitgate.output.webpages import (
    Filters,
    Snapshot,
    bundle_page,
    e,
    gates_page,
    layout,
    missing_page,
    overview_page,
    rollouts_page,
)
from gitgate.passes.recorded import (
    bundle_events,
    provenance_document,
    read_document,
    read_parts,
    recorded_status,
)
from gitgate.status.overview import merged_overview

HTML = "text/html; charset=utf-8"
log = logging.getLogger("gitgate")
COOKIE = "gitgate_ui"
_SECURITY = (("Content-Security-Policy",
              "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
              "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
             ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
             ("Cache-Control", "no-store"))


def session_value(token: bytes) -> str:
    """What the sign-in cookie holds: an HMAC of the token, so the cookie never carries it."""
    return hmac.new(token, b"gitgate-ui-session", hashlib.sha256).hexdigest()


def _cookies(header: str) -> dict[str, str]:
    out = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            out[name] = value
    return out


@dataclass(frozen=True)
class StateSource:
    """Where the pages read from: a snapshot now, and a bundle's events."""

    snapshot: Callable[[], Snapshot]
    events: Callable[[Inventory], list[dict[str, Any]]]


class Attempts:
    """Wrong tokens (sign-in form or bearer), counted per minute for everyone: past
    `per_minute`, every further try is refused until the minute is over, so a token cannot be
    guessed at line speed. The clock is the caller's (monotonic seconds)."""

    def __init__(self, per_minute: int = 10, clock: Callable[[], float] = time.monotonic):
        self.per_minute, self.clock = per_minute, clock
        self._window, self._count = -1, 0
        self._lock = threading.Lock()

    def _minute(self) -> int:
        minute = int(self.clock() // 60)
        if minute != self._window:
            self._window, self._count = minute, 0
        return minute

    def blocked(self) -> bool:
        with self._lock:
            self._minute()
            return self._count >= self.per_minute

    def failed(self) -> None:
        with self._lock:
            self._minute()
            self._count += 1


class WebUi:
    def __init__(self, source: StateSource, token: bytes | None = None,
                 attempts: Attempts | None = None):
        self.source = source
        self.token = token or None
        self.attempts = attempts or Attempts()

    # ------------------------------------------------------------------ auth
    def _signed_in(self, request: Request) -> bool:
        if self.token is None:
            return True
        bearer = request.headers.get("authorization", "")
        if bearer.startswith("Bearer "):
            if hmac.compare_digest(bearer.removeprefix("Bearer ").strip().encode(), self.token):
                return True
            self.attempts.failed()
            return False
        cookie = _cookies(request.headers.get("cookie", "")).get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(),
                                                    session_value(self.token).encode())

    def _sign_in(self, request: Request) -> Answer:
        given = parse_qs(request.body.decode("utf-8", "replace")).get("token", [""])[0]
        if self.token is None or not hmac.compare_digest(given.strip().encode(), self.token):
            self.attempts.failed()
            return self._login(401, "That token is not the one gitgate was given.")
        return Answer(303, b"", HTML, (
            ("Location", "/ui/"),
            ("Set-Cookie", f"{COOKIE}={session_value(self.token)}; Path=/; HttpOnly; "
                           "SameSite=Strict"), *_SECURITY))

    @staticmethod
    def _login(status: int, said: str = "") -> Answer:
        body = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                "<title>Sign in · gitgate</title><link rel=\"stylesheet\" href=\"/ui/app.css\">"
                "</head><body><header><strong>gitgate</strong></header><main><h1>Sign in</h1>"
                + (f'<p class="alert" role="alert">{said}</p>' if said else "")
                + "<p>This page is protected by the token gitgate was started with "
                "(<code>--ui-token-file</code>).</p><form class=\"login\" method=\"post\" "
                "action=\"/ui/login\"><label>Token <input type=\"password\" name=\"token\" "
                "autocomplete=\"current-password\" required></label>"
                "<button type=\"submit\">Sign in</button></form></main></body></html>")
        return Answer(status, body.encode(), HTML,
                      (("WWW-Authenticate", 'Bearer realm="gitgate"'), *_SECURITY))

    # ------------------------------------------------------------------ routes
    def __call__(self, request: Request) -> Answer:
        try:
            return self._answer(request)
        except Exception:  # a bug in a page: said in the log, never half a page
            log.exception("the web page %s failed", request.path, extra={"event": "ui"})
            return Answer(500, b"the page failed: see gitgate's log\n")

    def _answer(self, request: Request) -> Answer:
        path = request.path
        if path in ("/", "/ui"):
            return Answer(302, b"", HTML, (("Location", "/ui/"),))
        if path == "/ui/app.css":
            return Answer(200, STYLE.encode(), "text/css; charset=utf-8",
                          (("Cache-Control", "max-age=300"),))
        if path == "/ui/app.js":
            return Answer(200, SCRIPT.encode(), "text/javascript; charset=utf-8",
                          (("Cache-Control", "max-age=300"),))
        if self.token is not None and self.attempts.blocked() and (
                path == "/ui/login" and request.method == "POST"
                or request.headers.get("authorization", "").startswith("Bearer ")):
            return Answer(429, b"too many wrong tokens: try again in a minute\n", TEXT,
                          (("Retry-After", "60"),))
        if path == "/ui/login":
            if request.method == "POST":
                return self._sign_in(request)
            return self._login(200)
        if request.method != "GET":
            return Answer(405, b"method not allowed: the page only reads\n")
        if not self._signed_in(request):
            return self._login(401)
        try:
            snap = self.source.snapshot()
        except GitgateError as exc:  # the API server cannot be read: said, tried again
            return Answer(503, _unreadable(exc.message).encode(), HTML, _SECURITY)
        return Answer(200, self.page(snap, path, request.query).encode(), HTML, _SECURITY)

    def page(self, snap: Snapshot, path: str, query: str) -> str:
        if path == "/ui/":
            return overview_page(snap, Filters.of(parse_qs(query)))
        if path == "/ui/gates":
            return gates_page(snap)
        if path == "/ui/rollouts":
            return rollouts_page(snap)
        if path.startswith("/ui/bundles/"):
            name = unquote(path.removeprefix("/ui/bundles/"))
            found = next((i for i in snap.inventories if i.bundle == name), None)
            if found is None:
                return missing_page(snap, name)
            return bundle_page(snap, found, self.source.events(found))
        return missing_page(snap, unquote(path.removeprefix("/ui/")))


def _unreadable(message: str) -> str:
    snap = Snapshot(now=datetime.now(UTC), inventories=(), dispatch={}, overview={},
                    origin="the API server", problems=(f"cannot read gitgate's records: "
                                                       f"{message}",))
    return layout("Unavailable", f"<p>{e('The page will try again.')}</p>", snap, "")


# ------------------------------------------------------------------ sources
def loop_source(reconciler: Reconciler, refresh_seconds: int) -> StateSource:
    """`gitgate run`: the leader shows what it last read and planned, with no request to
    anyone (a bundle's events are read when its page is asked for). A standby (a replica
    behind the Service that does not hold the Lease) has planned nothing: it shows the records
    the leader keeps on the API server, as `gitgate ui` does."""
    standby = ApiSource(reconciler.cluster, reconciler.settings.apply.instance,
                        reconciler.clock, "", refresh_seconds)
    origin = f"{reconciler.source.display_url} ({reconciler.source.branch})"

    def snapshot() -> Snapshot:
        state = reconciler.state
        if not state.leading:
            return replace(standby.snapshot(), origin=f"{origin}; this replica stands by, "
                                                      "so this is what the leader recorded")
        if reconciler.shards is not None:  # this replica plans its share: show them all
            return replace(standby.snapshot(), origin=f"{origin}; what every replica "
                                                      "recorded (--shard)")
        problems = [f"last pass: {state.last_error}"] if state.last_error else []
        if state.observation is not None and state.observation.error:
            problems.append(state.observation.error)
        problems += provenance_lines(provenance_document(
            state.signature, state.gate_report, state.revision))
        failed = {b.bundle: str(Verdict.FAILED) for b in (
            state.last_result.bundles if state.last_result else ()) if b.failed}
        return Snapshot(
            now=reconciler.clock(), inventories=tuple((state.inventories or {}).values()),
            dispatch=state.observation.bundles if state.observation else {},
            overview=state.overview or {}, origin=origin,
            revision=state.revision or "", problems=tuple(problems),
            refresh_seconds=refresh_seconds, verdicts=failed)

    return StateSource(snapshot, lambda inv: bundle_events(reconciler.cluster, inv))


class ApiSource:
    """`gitgate ui --kubeconfig`: the records a loop left on the API server, read at most
    once per `fresh_for` seconds however many pages ask (several tabs polling cost one
    read)."""

    def __init__(self, cluster: ClusterPort, instance: str, clock: Callable[[], datetime],
                 origin: str, refresh_seconds: int, fresh_for: float = 2.0):
        self.cluster, self.instance, self.clock = cluster, instance, clock
        self.origin, self.refresh_seconds, self.fresh_for = origin, refresh_seconds, fresh_for
        self._lock = threading.Lock()
        self._read: tuple[float, Snapshot] | None = None

    def snapshot(self) -> Snapshot:
        with self._lock:
            if self._read is not None and time.monotonic() - self._read[0] < self.fresh_for:
                return self._read[1]
            recorded = recorded_status(self.cluster, self.instance)
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

    def as_source(self) -> StateSource:
        return StateSource(self.snapshot, lambda inv: bundle_events(self.cluster, inv))
