"""Secrets given as files and the wrong guesses at them: the web page's token and the webhook
secret, each read again when its file changes (`TokenFile`); the session cookies a page
sign-in issues; and the per-address count of wrong tokens (`Throttle`).

A cookie is an itsdangerous-signed, timestamped payload: a random session id (a new one at
every sign-in) and a fingerprint of the token it was issued under, signed with a key derived
from that token. It expires after `max_age`; a new token in the file ends every cookie issued
under the old one (their key and fingerprint no longer match), and the old token itself."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from itsdangerous import BadData, TimestampSigner, URLSafeTimedSerializer

log = logging.getLogger("gitgate")
SESSION_SECONDS = 12 * 3600


class SecretSource(Protocol):
    def current(self) -> bytes | None: ...


class TokenFile:
    """The token in a file (its content without surrounding whitespace), read again whenever
    the file's inode, size or modification time changes: a rotated token (a Kubernetes Secret
    volume swaps a symlink) takes effect at the next request, and the old one is refused
    from then on. An unreadable or empty file is no token: everything it guards is refused
    until it is back. `what` names the file in the log."""

    def __init__(self, path: Path, what: str = "the web page's token file"):
        self.path = path
        self.what = what
        self._seen: tuple[int, ...] | None = None
        self._token: bytes | None = None
        self._lock = threading.Lock()

    def current(self) -> bytes | None:
        try:
            stat = os.stat(self.path)
            seen: tuple[int, ...] = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        except OSError:
            seen = ()
        with self._lock:
            if seen != self._seen:
                self._seen, self._token = seen, self._read() if seen else None
                if self._token is None:
                    log.warning("%s %s cannot be read or is empty: everything it guards "
                                "is refused until it is back", self.what, self.path,
                                extra={"event": "secret-file"})
            return self._token

    def _read(self) -> bytes | None:
        try:
            return self.path.read_bytes().strip() or None
        except OSError:
            return None


class FixedToken:
    """A token given as it is (tests, and callers with no file)."""

    def __init__(self, token: bytes):
        self.token = token

    def current(self) -> bytes | None:
        return self.token


def _fingerprint(token: bytes) -> str:
    return hmac.new(token, b"gitgate-ui-token", hashlib.sha256).hexdigest()[:16]


class Sessions:
    """Issues and checks sign-in cookies. The clock is the caller's (epoch seconds)."""

    def __init__(self, max_age: int = SESSION_SECONDS,
                 clock: Callable[[], float] = time.time):
        self.max_age = max_age

        class Signer(TimestampSigner):
            def get_timestamp(self) -> int:
                return int(clock())

        self._signer = Signer

    def _serializer(self, token: bytes) -> URLSafeTimedSerializer:
        key = hmac.new(token, b"gitgate-ui-session-key", hashlib.sha256).digest()
        return URLSafeTimedSerializer(key, salt="gitgate-ui-session", signer=self._signer)

    def issue(self, token: bytes) -> str:
        return self._serializer(token).dumps(
            {"sid": secrets.token_urlsafe(16), "tok": _fingerprint(token)})

    def valid(self, cookie: str, token: bytes) -> bool:
        try:
            payload: Any = self._serializer(token).loads(cookie, max_age=self.max_age)
        except BadData:
            return False
        return (isinstance(payload, dict) and isinstance(payload.get("tok"), str)
                and hmac.compare_digest(payload["tok"], _fingerprint(token)))


class Throttle:
    """Wrong tokens (sign-in form, Bearer, webhook signature) counted per client address and
    minute. Past `per_minute`, that address's wrong tokens are answered 429 after `delay`
    seconds; no other address is touched, and a right token is never refused, from anywhere.
    The clock is the caller's (monotonic seconds); `what` names what is guarded in the log."""

    def __init__(self, per_minute: int = 10, clock: Callable[[], float] = time.monotonic,
                 delay: float = 1.0, max_addresses: int = 10_000,
                 what: str = "the web page"):
        self.per_minute, self.clock, self.delay = per_minute, clock, delay
        self.what = what
        self.max_addresses = max_addresses
        self._wrong: dict[str, tuple[int, int]] = {}  # address: (minute, wrong tokens)
        self._lock = threading.Lock()

    def failed(self, address: str) -> bool:
        """Counts a wrong token; says whether the address is past its share this minute."""
        minute = int(self.clock() // 60)
        with self._lock:
            seen, count = self._wrong.get(address, (minute, 0))
            count = count + 1 if seen == minute else 1
            if address not in self._wrong and len(self._wrong) >= self.max_addresses:
                self._wrong = {a: w for a, w in self._wrong.items() if w[0] == minute}
                if len(self._wrong) >= self.max_addresses:
                    return False  # as many addresses this minute: a new one is not kept
            self._wrong[address] = (minute, count)
        if count == self.per_minute + 1:
            log.warning("%d wrong tokens for %s from %s this minute", count, self.what,
                        address, extra={"event": "throttle"})
        return count > self.per_minute
