"""While a pass writes: the freeze files of a newer head of the remote, looked for every
`freeze_check` and at once on a webhook, which the pass checks before each write
(`late_freeze`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gitgate.errors import GitgateError
from gitgate.progression.latefreeze import NewerFreezes, merged, read_freezes
from gitgate.source.git import GitSource
from gitgate.source.localgit import LocalCheckout

log = logging.getLogger("gitgate")


class FreezeWatch:
    def __init__(self, source: GitSource | LocalCheckout, path: str, stop: threading.Event):
        self.source, self.path, self.stop = source, path, stop
        # while a pass writes: its revision, and the freeze files of a newer head of the
        # remote (`peek_newer`), which the pass checks before each write
        self._writing: str | None = None
        self._peeked = ""
        self.newer: NewerFreezes | None = None
        self.peek_wake = threading.Event()
        self._lock = threading.Lock()

    @contextmanager
    def writing(self, revision: str) -> Iterator[None]:
        """A pass at `revision` writes for as long as this lasts."""
        self.begin(revision)
        try:
            yield
        finally:
            with self._lock:
                self._writing, self.newer = None, None

    def begin(self, revision: str) -> None:
        with self._lock:
            self._writing, self._peeked, self.newer = revision, revision, None

    def peek_newer(self) -> bool:
        """While a pass writes: read the freeze files of the remote's head when it is newer
        than what the pass (or the last look) saw; the pass stops writing what they cover.
        Returns whether a newer head was read. A failed look is logged; the pass goes on."""
        with self._lock:
            writing, seen = self._writing, self._peeked
        if writing is None or not isinstance(self.source, GitSource):
            return False
        try:  # the network is asked with no lock held: the pass never waits for it
            found = [read_freezes(sha, tree) for sha, tree in self.source.peek(seen, self.path)]
        except GitgateError as exc:
            log.warning("cannot look for a newer commit while writing: %s", exc.message,
                        extra={"event": "peek-failed"})
            return False
        if not found:
            return False
        with self._lock:
            if self._writing != writing:
                return False  # that pass ended; the next one reads the head itself
            newer = merged([*([self.newer] if self.newer is not None else []), *found])
            self._peeked, self.newer = newer.revision, newer
        log.info("a newer commit %s while writing %s: its freezes stop what they cover now",
                 newer.revision[:12], writing[:12],
                 extra={"event": "newer-head", "revision": newer.revision})
        return True

    def watch(self, every: float) -> threading.Thread:
        """Look for a newer head while a pass writes: every `every` seconds (zero: only when
        woken), and at once on a webhook."""

        def watch() -> None:
            while not self.stop.is_set():
                self.peek_wake.wait(every if every > 0 else None)
                self.peek_wake.clear()
                if self.stop.is_set():
                    break
                try:
                    self.peek_newer()
                except Exception as exc:  # the watcher outlives any one look
                    log.exception("looking for a newer commit failed: %s", exc,
                                  extra={"event": "peek-failed"})

        thread = threading.Thread(target=watch, name="gitgate-newer", daemon=True)
        thread.start()
        return thread
