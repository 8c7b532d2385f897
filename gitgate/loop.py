"""`gitgate run`: follow a Git branch and reconcile forever.

A pass runs when the revision changes, when a gate changes state with time (an `until`
passes, a window opens or closes: the loop wakes up for it), when the resync timer is due, and
after a failure once its back-off has passed. A failed fetch or render keeps the last applied
state: nothing is pruned for it. The clock is a parameter.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gitgate.apply.engine import ApplyOptions, ClusterPort, PassResult
from gitgate.errors import GitgateError, Reason
from gitgate.pipeline import reconcile
from gitgate.plan import Plan
from gitgate.render.cache import RenderCache
from gitgate.render.tools import Tools
from gitgate.source.git import GitSource
from gitgate.status.metrics import LoopMetrics

log = logging.getLogger("gitgate")


@dataclass(frozen=True)
class LoopSettings:
    path: str = "."
    interval: timedelta = timedelta(minutes=1)
    resync: timedelta = timedelta(minutes=10)
    backoff_base: timedelta = timedelta(seconds=5)
    backoff_cap: timedelta = timedelta(minutes=5)
    apply: ApplyOptions = field(default_factory=lambda: ApplyOptions(now=datetime.now(UTC)))


@dataclass
class LoopState:
    revision: str | None = None  # last revision reconciled without failure
    last_pass: datetime | None = None
    next_transition: datetime | None = None
    failures: int = 0
    retry_at: datetime | None = None
    ready: bool = False
    last_reason: str = ""
    last_error: str = ""
    last_result: PassResult | None = None
    last_plan: Plan | None = None


def backoff(failures: int, base: timedelta, cap: timedelta) -> timedelta:
    return min(cap, base * (2 ** max(0, failures - 1)))


def pass_reason(state: LoopState, revision: str, now: datetime,
                resync: timedelta) -> str | None:
    """Why a pass is due now, or None (pure)."""
    if state.retry_at is not None:
        return "retry" if now >= state.retry_at else None
    if state.revision != revision:
        return "revision"
    if state.next_transition is not None and now >= state.next_transition:
        return "gate-transition"
    if state.last_pass is None or now - state.last_pass >= resync:
        return "resync"
    return None


def next_wake(state: LoopState, now: datetime, interval: timedelta) -> datetime:
    """The next poll, earlier when a gate transition or a retry comes first (pure)."""
    candidates = [now + interval]
    for moment in (state.next_transition, state.retry_at):
        if moment is not None:
            candidates.append(max(moment, now))
    return min(candidates)


def next_transition(plan: Plan, now: datetime) -> datetime | None:
    changes = [b.verdict.next_change for b in plan.bundles
               if b.verdict.next_change is not None and b.verdict.next_change > now]
    changes += [s.next_change for s in plan.gates
                if s.next_change is not None and s.next_change > now]
    return min(changes) if changes else None


class Reconciler:
    def __init__(self, source: GitSource, cluster: ClusterPort, tools: Tools,
                 settings: LoopSettings, *, clock: Callable[[], datetime] | None = None,
                 metrics: LoopMetrics | None = None):
        self.source = source
        self.cluster = cluster
        self.tools = tools
        self.settings = settings
        self.clock = clock or (lambda: datetime.now(UTC))
        self.metrics = metrics or LoopMetrics()
        self.state = LoopState()
        self.render_cache = RenderCache()
        self.wake = threading.Event()
        self.stop = threading.Event()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ one tick
    def tick(self) -> str | None:
        """Fetch, and run a pass if one is due. Returns why a pass ran, or None."""
        with self._lock:
            now = self.clock()
            try:
                revision = self.source.sync()
            except GitgateError as exc:
                self._failed(now, Reason.SOURCE_FAILED, exc.message)
                return None
            reason = pass_reason(self.state, revision, now, self.settings.resync)
            if reason is None:
                return None
            self._pass(now, revision, reason)
            return reason

    def _pass(self, now: datetime, revision: str, reason: str) -> None:
        started = time.monotonic()
        root = self.source.cache_dir / self.settings.path
        try:
            options = replace(self.settings.apply, now=now, resync=self.settings.resync)
            plan, result = reconcile(root, self.tools, self.cluster, options,
                                     revision=revision, cache=self.render_cache, stop=self.stop)
        except GitgateError as exc:
            self._failed(now, exc.reason, exc.message)
            return
        duration = time.monotonic() - started
        self.metrics.pass_duration.observe(duration)
        self.state.last_plan, self.state.last_result = plan, result
        self.state.last_pass, self.state.last_reason = now, reason
        self.state.next_transition = next_transition(plan, now)
        verdicts = {b.bundle: ("failed" if b.failed else b.verdict) for b in result.bundles
                    if b.verdict != "removed"}
        self.metrics.record_verdicts(verdicts)
        self.metrics.record_revision(revision)
        self.metrics.applied.inc(sum(len(b.applied) for b in result.bundles))
        self.metrics.pruned.inc(sum(len(b.pruned) for b in result.bundles))
        for bundle in result.bundles:
            if bundle.failed:
                self.metrics.errors.labels(bundle.reason or Reason.FAILED).inc()
        counts = {v: sum(1 for x in verdicts.values() if x == v)
                  for v in ("apply", "held", "suspended", "failed")}
        log.info("pass revision=%s reason=%s applied=%d held=%d suspended=%d failed=%d "
                 "duration=%.2fs", revision[:12], reason, counts["apply"], counts["held"],
                 counts["suspended"], counts["failed"], duration,
                 extra={"event": "pass", "revision": revision, "reason": reason,
                        "bundles": counts, "duration": duration})
        if result.ok:
            self.state.revision, self.state.failures, self.state.retry_at = revision, 0, None
            self.state.ready, self.state.last_error = True, ""
            self.metrics.last_success.set(now.timestamp())
        else:
            if result.prune_blocked:
                self.metrics.errors.labels(Reason.PRUNE_BLOCKED).inc()
            self._failed(now, Reason.PASS_FAILED, "; ".join(
                f"{b.bundle}: {b.reason}: {b.message}" for b in result.bundles if b.failed)
                or "prune blocked", count_metric=False)
            self.state.revision = revision

    def _failed(self, now: datetime, reason: Reason, message: str, *,
                count_metric: bool = True) -> None:
        self.state.failures += 1
        self.state.retry_at = now + backoff(self.state.failures, self.settings.backoff_base,
                                            self.settings.backoff_cap)
        self.state.last_error = f"{reason}: {message}"
        if count_metric:
            self.metrics.errors.labels(reason).inc()
        log.warning("%s: %s (retry at %s)", reason, message, self.state.retry_at.isoformat(),
                    extra={"event": "failure", "reason": reason})

    # ------------------------------------------------------------------ forever
    def trigger(self) -> None:
        """A webhook: fetch now."""
        self.wake.set()

    def run(self, is_leader: Callable[[], bool] = lambda: True) -> None:
        while not self.stop.is_set():
            self.metrics.leader.set(1 if is_leader() else 0)
            if is_leader():
                try:
                    self.tick()
                except Exception as exc:  # keep the loop alive; the error is logged once
                    log.exception("unexpected error in a pass: %s", exc)
                    self._failed(self.clock(), Reason.INTERNAL_ERROR, str(exc))
            now = self.clock()
            wake_at = next_wake(self.state, now, self.settings.interval)
            timeout = max(0.05, (wake_at - now).total_seconds())
            if not is_leader():
                timeout = min(timeout, 1.0)
            self.wake.wait(timeout)
            self.wake.clear()


def cache_dir_default() -> Path:
    return Path.home() / ".cache" / "gitgate" / "repo"
