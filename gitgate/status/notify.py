"""Notifications of transitions (a freeze held or lifted, a rollout wave released or halted, a
failure, a freeze about to lift, an unsigned head), sent through apprise, which speaks Slack,
Microsoft Teams, e-mail, generic JSON webhooks and many more from one URL each, so gitgate
writes no client of its own. A pass only offers messages: a thread sends them, so a slow or
dead receiver never holds a pass. Each message is sent once (a repeat within the dedup window
is dropped) and at most `per_minute` go out in a minute; what is over is counted and said in
the next message that goes. Messages are built from events and reasons, which never carry a
Secret's values; the URLs themselves (tokens inside) are never logged."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from gitgate.apply.transitions import WARNING, Transition
from gitgate.errors import ConfigError, Reason
from gitgate.gate.evaluate import GateState
from gitgate.timespec import rfc3339

log = logging.getLogger("gitgate")


@dataclass(frozen=True)
class Message:
    key: str  # the same transition twice has the same key
    title: str
    body: str
    warning: bool = False


Sender = Callable[[Message], bool]


def read_urls(path: Path) -> list[str]:
    """One apprise URL per line (blank lines and `#` comments skipped). A line apprise does
    not know fails with its line number, never its text (it may hold a token)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path} (--notify-urls-file): "
                          f"{exc.strerror or exc}") from None
    import apprise

    urls = []
    for number, line in enumerate(text.splitlines(), 1):
        url = line.strip()
        if not url or url.startswith("#"):
            continue
        if apprise.Apprise.instantiate(url) is None:
            raise ConfigError(f"{path}:{number} is not a notification URL apprise knows "
                              "(e.g. slack://, msteams://, mailto://, json://host/path)")
        urls.append(url)
    return urls


def apprise_sender(urls: list[str]) -> Sender:
    import apprise

    target = apprise.Apprise()
    for url in urls:
        target.add(url)

    def send(message: Message) -> bool:
        kind = apprise.NotifyType.WARNING if message.warning else apprise.NotifyType.INFO
        return bool(target.notify(title=message.title, body=message.body, notify_type=kind))
    return send


class Notifier:
    """Sends what it is offered, once each, in order, at a bounded rate, from its own thread."""

    def __init__(self, send: Sender, *, per_minute: int = 20, dedup_seconds: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic):
        self.send, self.per_minute, self.dedup_seconds = send, per_minute, dedup_seconds
        self.clock = clock
        self.sent = 0
        self.dropped = 0  # over the rate: not sent, said in the next message that goes
        self.failed = 0
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._window: list[float] = []
        self._queue: queue.Queue[Message | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="gitgate-notify", daemon=True)
        self._thread.start()

    def offer(self, messages: Iterable[Message]) -> None:
        """Queue what was not offered within the dedup window; never blocks."""
        now = self.clock()
        for message in messages:
            while self._seen and next(iter(self._seen.values())) < now - self.dedup_seconds:
                self._seen.popitem(last=False)
            if message.key in self._seen:
                continue
            self._seen[message.key] = now
            self._queue.put(message)

    def _run(self) -> None:
        while True:
            message = self._queue.get()
            if message is None:
                return
            now = self.clock()
            self._window = [t for t in self._window if t > now - 60]
            if len(self._window) >= self.per_minute:
                self.dropped += 1
                continue
            self._window.append(now)
            if self.dropped:
                message = Message(message.key, message.title, f"{message.body}\n({self.dropped} "
                                  "more notification(s) were not sent: over the rate)",
                                  message.warning)
                self.dropped = 0
            try:
                ok = self.send(message)
            except Exception as exc:  # a receiver's failure is never the pass's
                ok = False
                log.warning("notification failed: %s", type(exc).__name__,
                            extra={"event": "notify-failed"})
            if ok:
                self.sent += 1
            else:
                self.failed += 1

    def drain(self, timeout: float = 10.0) -> None:
        """Wait until what was offered has been handled (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while not self._queue.empty() and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)


NOTIFIED = {Reason.HELD, Reason.LIFTED, Reason.WAVE_RELEASED, Reason.ROLLOUT_HALTED}


def pass_messages(transitions: Iterable[tuple[str, Transition]],
                  revision: str) -> list[Message]:
    """What a pass changed that people are told of (pure): a hold and its lift, a wave
    released or halted, a failure. Applies and prunes are in the events, not notified."""
    out = []
    for bundle, event in transitions:
        failed = event.type == WARNING and event.reason != Reason.ROLLOUT_HALTED
        if event.reason not in NOTIFIED and not failed:
            continue
        out.append(Message(f"{bundle}|{event.reason}|{event.note}",
                           f"gitgate: {bundle}: {'failed, ' if failed else ''}{event.reason}",
                           f"{event.note}\n(revision {revision[:12]})",
                           warning=event.type == WARNING))
    return out


def expiring_messages(gates: Iterable[GateState], now: datetime,
                      within: timedelta = timedelta(hours=1)) -> list[Message]:
    """Each active freeze that lifts by itself within the hour, once per gate and time."""
    out = []
    for state in gates:
        until = state.gate.until
        if not state.active or until is None or not now < until <= now + within:
            continue
        covers = ", ".join(state.covers) or "nothing now"
        out.append(Message(f"expiring|{state.gate.name}|{rfc3339(until)}",
                           f"gitgate: freeze {state.gate.name} lifts at {rfc3339(until)}",
                           f"{state.gate.reason}\ncovers: {covers}"))
    return out


def unsigned_message(said: str, commit: str, in_force: str | None) -> Message:
    kept = f"{in_force[:12]} stays in force" if in_force else "nothing is applied"
    return Message(f"unsigned|{commit}", "gitgate: head not applied (signature)",
                   f"{said}; {kept}", warning=True)
