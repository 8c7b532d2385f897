"""Fencing for `gitgate run --shard`: a replica writes only while its own Lease has stayed
fresh since its pass began. Its Lease is renewed every few seconds; each renewal that comes
after a gap longer than the renew deadline (the process was paused, the API server was out of
reach) starts a new *term*. A pass takes the term it starts in, and every write of that pass
checks, just before it is sent, that the Lease is still fresh and the term unchanged. The
renew deadline is shorter than the Lease's duration, so a replica stops writing before the
others may take its bundles over. A renewal that writes another Lease object than the last
(its uid changed: someone deleted the Lease) starts a new term too. Pure but for the clock,
which is the caller's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from gitgate.apiserver.ports import ClusterPort, Delegating, create
from gitgate.errors import KubeError, Reason
from gitgate.model import FIELD_MANAGER, Manifest


class Fence:
    def __init__(self, renew_deadline: float, clock: Callable[[], float] = time.monotonic):
        self.renew_deadline = renew_deadline
        self.clock = clock
        self._renewed_at: float | None = None
        self._term = 0
        self._lease: str | None = None  # the uid of the Lease object last renewed
        self._lock = threading.Lock()

    def _fresh(self, now: float) -> bool:
        return self._renewed_at is not None and now - self._renewed_at < self.renew_deadline

    def renewed(self, at: float | None = None, lease: str | None = None) -> bool:
        """The Lease was renewed (at `at`, when the request was sent; else now; `lease`: the
        uid of the Lease object the renewal wrote). After a gap longer than the renew deadline,
        or when the renewal wrote another Lease object than the last one (someone deleted it),
        this is a new term. Returns False for the latter."""
        with self._lock:
            moment = self.clock() if at is None else at
            same = self._lease is None or lease == self._lease  # an answer without one: not
            if not self._fresh(moment) or not same:
                self._term += 1
            self._renewed_at = moment
            if lease is not None:
                self._lease = lease
            return same

    def lapse(self) -> None:
        """The Lease is gone (deleted on shutdown, or taken): no write from now on."""
        with self._lock:
            self._renewed_at = None
            self._term += 1

    def term(self) -> int | None:
        """The current term while the Lease is fresh (None: this replica may not write)."""
        with self._lock:
            return self._term if self._fresh(self.clock()) else None

    def holds(self, term: int) -> bool:
        with self._lock:
            return self._term == term and self._fresh(self.clock())


class FencedCluster(Delegating):
    """A ClusterPort whose writes (apply, create, delete; never a dry run) are sent only while
    `fence` still holds `term`; otherwise they raise KubeError(Fenced) and reach nobody."""

    def __init__(self, own: ClusterPort, fence: Fence, term: int):
        super().__init__(own)
        self.fence, self.term = fence, term

    def _check(self, what: str) -> None:
        if not self.fence.holds(self.term):
            raise KubeError(f"not written: {what}: this replica's Lease lapsed during the pass "
                            "(paused, or cut off from the API server); another replica may "
                            "hold its shard now", reason=Reason.FENCED)

    def apply(self, obj: Manifest, *, dry_run: bool = False, force: bool = False,
              manager: str = FIELD_MANAGER, subresource: str = "") -> Any:
        if not dry_run:
            meta = obj.get("metadata") or {}
            self._check(f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}")
        return self.own.apply(obj, dry_run=dry_run, force=force, manager=manager,
                              subresource=subresource)

    def create(self, obj: Manifest) -> None:
        meta = obj.get("metadata") or {}
        self._check(f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}")
        create(self.own, obj)

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        self._check(f"delete {kind} {namespace}/{name}")
        return self.own.delete(api_version, kind, namespace, name)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method not in ("GET", "HEAD"):
            self._check(f"{method} {path}")
        return self.own.request(method, path, **kwargs)  # type: ignore[attr-defined]

    def impersonating(self, user: str) -> FencedCluster:
        """The same fence over the API server's client acting as `user` (tenants)."""
        return FencedCluster(self.own.impersonating(user), self.fence,  # type: ignore[attr-defined]
                             self.term)

    def __getattr__(self, name: str) -> Any:  # watch and the like: reads, passed through
        return getattr(self.own, name)
