"""The loop's endpoints as Starlette routes: /healthz, /readyz, /metrics, /status, the Git
webhook (`POST /hooks/git`, accepted only with a valid X-Hub-Signature-256) and `POST
/reconcile` (a pass now, accepted only with `Authorization: Bearer <the webhook secret>`);
the read-only web page's routes when the loop is given them (`output.webui`).

The webhook secret is asked of its source at each request (`signin.TokenFile` reads the file
again when it changes: after a rotation only the new secret is accepted). Wrong signatures
and wrong Bearer tokens are counted per client address (`signin.Throttle`): past the share,
that address's wrong ones get a late 429; the right secret is never refused.

/healthz and /readyz are answered on the event loop itself (never queued behind work); the
answers that call into the loop run in Starlette's worker threads. Before any route, a
request whose body passes `body_bytes` is answered 413 (by its Content-Length before a byte
of it is read), and one that repeats a header that must be single (Authorization, Cookie,
X-Hub-Signature-256) is answered 400: never "the last one wins"."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gitgate.endpoints.connection import Limits
from gitgate.endpoints.signin import FixedToken, SecretSource, Throttle

TEXT = "text/plain; charset=utf-8"
SINGLE_HEADERS = (b"authorization", b"cookie", b"x-hub-signature-256")


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
                 webhook_secret: bytes | SecretSource | None,
                 request_pass: Callable[[], int] | None = None,
                 leading: Callable[[], bool] = lambda: True,
                 pages: Sequence[BaseRoute] = (),
                 throttle: Throttle | None = None):
        self.ready = ready
        self.status = status
        self.metrics = metrics
        self.trigger = trigger
        # None: the webhook and /reconcile are off; a source answering None refuses them all
        self.webhook_secret: SecretSource | None = (
            FixedToken(webhook_secret) if isinstance(webhook_secret, bytes) else webhook_secret)
        self.throttle = throttle or Throttle(what="/hooks/git and /reconcile")
        # asks the loop for a pass now; returns how many passes had run before it
        self.request_pass = request_pass
        self.leading = leading
        self.pages = pages  # the read-only web page's routes under /ui/ (none: not served)


def text(status: int, said: str, headers: dict[str, str] | None = None) -> Response:
    return PlainTextResponse(said, status, headers)


def endpoint_app(endpoints: LoopEndpoints, limits: Limits) -> ASGIApp:
    async def healthz(request: Request) -> Response:
        return text(200, "ok\n")

    async def readyz(request: Request) -> Response:
        ready = endpoints.ready()
        return text(200 if ready else 503, "ready\n" if ready else "not ready\n")

    def metrics(request: Request) -> Response:
        return Response(endpoints.metrics(), 200,
                        media_type="text/plain; version=0.0.4; charset=utf-8")

    def status(request: Request) -> Response:
        return Response(json.dumps(endpoints.status(), indent=2), 200,
                        media_type="application/json")

    async def wrong(request: Request, answer: Response) -> Response:
        """A wrong secret: `answer`, or past the address's share this minute a 429, late."""
        throttle = endpoints.throttle
        if not throttle.failed(request.client.host if request.client else "?"):
            return answer
        await asyncio.sleep(throttle.delay)
        return text(429, "too many wrong secrets from this address: try again in a minute\n",
                    {"Retry-After": "60"})

    async def hook(request: Request) -> Response:
        refused = _disabled(endpoints, request.url.path)
        if refused is not None:
            return refused
        assert endpoints.webhook_secret is not None
        secret = endpoints.webhook_secret.current() or b""
        if not valid_signature(secret, await request.body(),
                               request.headers.get("x-hub-signature-256")):
            return await wrong(request, text(401, "invalid signature\n"))
        endpoints.trigger()
        return text(202, "fetch triggered\n")

    async def reconcile(request: Request) -> Response:
        refused = _disabled(endpoints, request.url.path)
        if refused is not None:
            return refused
        assert endpoints.webhook_secret is not None
        secret = endpoints.webhook_secret.current()
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not secret or not hmac.compare_digest(token.encode(), secret):
            return await wrong(request, text(
                401, "unauthorized: send Authorization: Bearer <webhook secret>\n"))
        return await run_in_threadpool(accept_pass)

    def accept_pass() -> Response:
        if not endpoints.leading() or endpoints.request_pass is None:
            return text(503, "standby: this replica does not lead; retry (another replica "
                             "leads)\n")
        return JSONResponse({"accepted": True, "passesBefore": endpoints.request_pass()}, 202)

    app = Starlette(routes=[
        Route("/healthz", healthz), Route("/readyz", readyz),
        Route("/metrics", metrics), Route("/status", status),
        Route("/hooks/git", hook, methods=["POST"]),
        Route("/reconcile", reconcile, methods=["POST"]),
        *endpoints.pages])
    return RequestGuard(app, limits.body_bytes)


def _disabled(endpoints: LoopEndpoints, path: str) -> Response | None:
    if endpoints.webhook_secret is not None:
        return None
    return text(403, f"{path} disabled: start gitgate with --webhook-secret-file\n")


class RequestGuard:
    """Before any route: single headers said once, and a body of at most `limit` bytes,
    read whole (so a route never sees half a body)."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        names = [name for name, _ in scope["headers"]]
        repeated = sorted({n.decode() for n in SINGLE_HEADERS if names.count(n) > 1})
        if repeated:
            await _close(text(400, f"header sent more than once: {', '.join(repeated)}\n"),
                         scope, receive, send)
            return
        lengths = [value for name, value in scope["headers"] if name == b"content-length"]
        if lengths and int(lengths[0]) > self.limit:  # the parser checked it is a number
            await _close(text(413, "payload too large\n"), scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await _close(text(413, "payload too large\n"), scope, receive, send)
                return
        replay: list[Message] = [{"type": "http.request", "body": bytes(body),
                                  "more_body": False}]

        async def again() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, again, send)


async def _close(answer: Response, scope: Scope, receive: Receive, send: Send) -> None:
    """An answer after which the connection is closed (the request was not read whole)."""
    answer.headers["connection"] = "close"
    await answer(scope, receive, send)
