"""What went wrong talking to the API server, in words a user can act on (pure).

Transport failures (refused, timed out, TLS) and the answers that are about gitgate's
credentials rather than an object (401, an RBAC 403) become one `KubeError` each, naming the
server URL or the verb and resource, never a token.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from gitgate.errors import KubeError, Reason
from gitgate.model import ObjectRef

MAX_ANSWER = 64 * 1024 * 1024  # bytes: a page of 500 large objects fits many times over


@dataclass(frozen=True)
class Timeouts:
    """What one request to the API server may take: seconds to connect (`--connect-timeout`),
    seconds for the whole request, from connecting to the answer's last byte
    (`--request-timeout`; a watch: its own length plus that), and the bytes of one answer or
    of one watch event (`--max-answer-size`)."""

    connect: float = 5.0
    read: float = 30.0
    max_answer: int = MAX_ANSWER


class RedirectRefused(KubeError):
    """The API server answered a redirect: gitgate follows none (a redirect could send its
    token, or its writes, to another server)."""

    def __init__(self, what: str, server: str, status: int, location: str) -> None:
        target = display_url(location) if location else "no Location"
        super().__init__(f"{what}: {server} answered {status}, a redirect to {target}; "
                         "gitgate follows no redirects: point the kubeconfig at the API "
                         "server itself", status=status, reason=Reason.API_REDIRECT)
        self.location = location


class AnswerTooLarge(KubeError):
    """An answer (or one watch event, or its headers) past what gitgate reads of one."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason=Reason.API_ANSWER_TOO_LARGE)


class AnswerRefused(KubeError):
    """An answer gitgate did not ask for: content encoded (gzip, ...) when it asked for
    `identity` (refused, never decoded: a small gzip body can decode to gigabytes), a switch
    of protocol, a length that is no length."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason=Reason.API_ANSWER_REFUSED)


def encoding_refused(what: str, server: str, encoding: str) -> AnswerRefused:
    return AnswerRefused(f"{what}: {server} answered in Content-Encoding {encoding!r}, which "
                         "gitgate did not ask for (it asks for identity): refused, not decoded")


def malformed_answer(what: str, server: str, detail: str) -> AnswerRefused:
    return AnswerRefused(f"{what}: {server} answered what is no HTTP/1.1 answer to it "
                         f"({detail})")


def size_text(size: int) -> str:
    """`67108864` -> '64 MiB'; what `--max-answer-size` was given, in its own words."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"


def answer_too_large(what: str, server: str, limit: int) -> AnswerTooLarge:
    return AnswerTooLarge(f"{what}: the answer from {server} is larger than "
                          f"{size_text(limit)} (--max-answer-size); gitgate stopped reading it")


def event_too_large(what: str, server: str, limit: int) -> AnswerTooLarge:
    return AnswerTooLarge(f"{what}: one event from {server} is larger than {size_text(limit)} "
                          "(--max-answer-size); gitgate stopped reading the watch")


def deadline_passed(what: str, server: str, seconds: float) -> KubeError:
    return KubeError(f"timed out after {seconds:g}s waiting for the whole answer to {what} "
                     f"from {server} (--request-timeout)", reason=Reason.API_TIMEOUT)


@dataclass(frozen=True)
class RetryPolicy:
    """The adapter's one retry policy: a request the server never received (connection
    refused or reset before an answer) or one it turned away with 429 is sent again, at most
    `attempts` times in all, `backoff` seconds apart, doubling. Timeouts are not retried, so a
    hung server costs one timeout, not several."""

    attempts: int = 3
    backoff: float = 0.2

    def delay(self, attempt: int) -> float:
        return self.backoff * float(2 ** attempt)


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what it wraps (urllib3's `reason`, causes, contexts)."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [getattr(current, "reason", None) if isinstance(
            getattr(current, "reason", None), BaseException) else None,
            current.__cause__, current.__context__]
    return seen


def _named(chain: list[BaseException], *names: str) -> bool:
    return any(type(e).__name__ in names for e in chain)


HIDDEN = "(value hidden)"
HIDDEN_MESSAGE = ("the API server's message is hidden: it may quote a value of this Secret, "
                  "whose values never leave gitgate")


def secret_values(obj: Any) -> tuple[str, ...]:
    """Every value a Secret holds, as written and (for `data`) decoded, longest first; () for
    any other object. An API error about the Secret may quote any of them, in any words."""
    if not isinstance(obj, dict) or obj.get("kind") != "Secret" or "/" in str(
            obj.get("apiVersion", "")):
        return ()
    found: set[str] = set()
    for key in ("data", "stringData"):
        values = obj.get(key)
        for value in values.values() if isinstance(values, dict) else [values]:
            if value is None:
                continue
            text = value if isinstance(value, str) else json.dumps(value)
            found |= {text, json.dumps(text)[1:-1]}
            if key == "data" and isinstance(value, str):
                try:
                    decoded = base64.b64decode(value, validate=True).decode("utf-8")
                except (ValueError, UnicodeDecodeError):
                    continue
                found |= {decoded, json.dumps(decoded)[1:-1]}
    return tuple(sorted((v for v in found if v), key=len, reverse=True))


def hide_values(message: str, values: tuple[str, ...]) -> str:
    """`message` with each of `values` replaced; wholly replaced when a value is too short to
    be told from ordinary words."""
    if any(len(v) < 4 for v in values):
        return HIDDEN_MESSAGE
    for value in values:
        message = message.replace(value, HIDDEN)
    return message


def display_url(url: str) -> str:
    """The server URL fit to print: a `user:password@` in it (some kubeconfigs carry one) and
    any query are left out."""
    parts = urlsplit(url)
    if not parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def transport_error(exc: BaseException, server: str, timeouts: Timeouts) -> tuple[KubeError,
                                                                                 bool]:
    """The error for a request that got no HTTP answer, and whether it may be retried."""
    chain = _chain(exc)
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return KubeError(f"connection refused: {server} (is the API server running, and is "
                         "this its address?)", reason=Reason.API_UNREACHABLE), True
    if _named(chain, "ReadTimeoutError") or any(isinstance(e, socket.timeout | TimeoutError)
                                                and "read" in str(e).lower() for e in chain):
        return KubeError(f"timed out after {timeouts.read:g}s waiting for an answer from "
                         f"{server} (--request-timeout)", reason=Reason.API_TIMEOUT), False
    if _named(chain, "ConnectTimeoutError") and not _named(chain, "NewConnectionError"):
        return KubeError(f"timed out after {timeouts.connect:g}s connecting to {server} "
                         "(--connect-timeout)", reason=Reason.API_TIMEOUT), False
    if any(isinstance(e, ssl.SSLEOFError | ssl.SSLZeroReturnError) for e in chain):
        # the server closed a TLS connection under a request: no handshake failed
        return KubeError(f"the connection to {server} was closed before an answer",
                         reason=Reason.API_UNREACHABLE), True
    if any(isinstance(e, ssl.SSLError) for e in chain) or _named(chain, "SSLError"):
        return KubeError(f"TLS handshake with {server} failed: check the kubeconfig's "
                         "certificate-authority-data (or the server name)",
                         reason=Reason.API_UNREACHABLE), False
    if any(isinstance(e, socket.gaierror) for e in chain):
        return KubeError(f"cannot resolve the API server's host name: {server}",
                         reason=Reason.API_UNREACHABLE), False
    if any(isinstance(e, ConnectionResetError | BrokenPipeError) for e in chain) or _named(
            chain, "ProtocolError", "RemoteDisconnected"):
        return KubeError(f"the connection to {server} was closed before an answer",
                         reason=Reason.API_UNREACHABLE), True
    return KubeError(f"cannot reach the API server {server}: {type(exc).__name__}",
                     reason=Reason.API_UNREACHABLE), False


_VERBS = {"PATCH": "patch", "POST": "create", "PUT": "update", "DELETE": "delete"}


def verb_and_resource(method: str, path: str) -> tuple[str, str]:
    """`GET /apis/apps/v1/namespaces/shop/deployments` -> ('list', 'deployments.apps in
    namespace shop')."""
    parts = [unquote(p) for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"]:
        group, rest = parts[1] if len(parts) > 1 else "", parts[3:]
    else:
        return method.lower(), path
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return "get", f"the API group {group or 'core'}"
    plural = rest[0] + (f".{group}" if group else "")
    name = rest[1] if len(rest) > 1 else ""
    verb = _VERBS.get(method, "get" if name else "list")
    where = f" {name}" if name else ""
    return verb, f"{plural}{where}" + (f" in namespace {namespace}" if namespace else "")


def _message(body: Any) -> str:
    return str(body.get("message", "")) if isinstance(body, dict) else str(body or "")[:300]


def credential_error(status: int, body: Any, method: str, path: str) -> KubeError | None:
    """401, or a 403 from authorization (not from admission, a webhook's or a
    ValidatingAdmissionPolicy's, or a terminating namespace)."""
    if status == 401:
        return KubeError("unauthorized (check the token in KUBECONFIG, or the client "
                         "certificate; it may have expired)", status=401,
                         api_reason=Reason.API_UNAUTHORIZED.value, reason=Reason.API_UNAUTHORIZED)
    if status != 403:
        return None
    message = _message(body)
    causes = ((body.get("details") or {}).get("causes") or []) if isinstance(body, dict) else []
    if "admission webhook" in message or "denied request" in message or any(
            c.get("reason") == Reason.NAMESPACE_TERMINATING for c in causes):
        return None
    verb, resource = verb_and_resource(method, path)
    return KubeError(f"forbidden: {verb} {resource} (grant it to gitgate's user: "
                     "deploy/rbac; the API server says: " + message + ")", status=403,
                     api_reason=Reason.API_FORBIDDEN.value, reason=Reason.API_FORBIDDEN)


_CONFLICT = re.compile(r'conflicts? with "([^"]+)"')
_QUOTED_VALUE = re.compile(r'((?:Invalid|Unsupported|Duplicate) value: )(?:"(?:[^"\\]|\\.)*"|\S+)')


def message_of(body: Any) -> str:
    """The API server's message in an answer (a Status, or text)."""
    if isinstance(body, dict):
        return str(body.get("message") or body.get("reason") or body)
    return str(body).strip()[:300]


def object_error(ref: ObjectRef, verb: str, status: int, body: Any) -> KubeError:
    """A refused read, write or delete of one object: the API server's words, who owns the
    conflicting fields and what to do, and a Secret's rejected values hidden."""
    message = message_of(body)
    if ref.kind == "Secret":  # the API server quotes rejected values: never a Secret's
        message = _QUOTED_VALUE.sub(r"\1(value hidden)", message)
    api_reason = body.get("reason", "") if isinstance(body, dict) else ""
    owners = tuple(dict.fromkeys(_CONFLICT.findall(message))) if status == 409 else ()
    causes = ((body.get("details") or {}).get("causes") or []) if isinstance(body,
                                                                        dict) else []
    immutable = tuple(c.get("field", "") for c in causes
                      if "immutable" in str(c.get("message", "")))
    hint = ""
    reason = {"read": Reason.READ_FAILED, "delete": Reason.DELETE_FAILED}.get(
        verb, Reason.APPLY_FAILED)
    if owners:
        hint = (f"; field manager {', '.join(owners)} owns these fields: change it there, "
                "or run with --force-conflicts to take them over")
    if status == 413:
        hint = ("; the object is larger than the API server takes in one request: keep it "
                "under 1 MiB (a ConfigMap or Secret holds at most that, and etcd stores "
                "about 1.5 MiB per object): split it, or keep the data out of the object")
    if any(c.get("reason") == Reason.NAMESPACE_TERMINATING for c in causes):
        reason = Reason.NAMESPACE_TERMINATING
        hint = ("; the namespace is still being deleted (its finalizers run): a later "
                "pass writes the object once the namespace is gone")
    return KubeError(f"{verb} {ref} failed ({status} {api_reason}): {message}{hint}",
                     status=status, api_reason=api_reason, conflict_with=owners,
                     reason=reason, immutable_fields=immutable)


def without(error: KubeError, hidden: tuple[str, ...]) -> KubeError:
    """The error with none of `hidden` in its message (the same error when there are none)."""
    if hidden:
        error.message = hide_values(error.message, hidden)
        error.args = (error.message,)
    return error
