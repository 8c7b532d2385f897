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
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply.recordcache import RecordCache, WatchFeed
from gitgate.charts.stage import ChartFetcher
from gitgate.errors import GitgateError, Reason, SourceError
from gitgate.gitops.failurerollback import RollbackOnFailure
from gitgate.heap import give_back
from gitgate.loop.freezewatch import FreezeWatch
from gitgate.loop.halts import commit_halts, commit_rollbacks, halt_repo
from gitgate.loop.headtrust import HeadTrust
from gitgate.loop.loopdocs import LoopDocuments
from gitgate.loop.observer import Observer
from gitgate.loop.reporting import PassReporter
from gitgate.loop.schedule import (
    API_DOWN,
    LoopSettings,
    LoopState,
    backoff,
    next_check,
    next_transition,
    next_wake,
    pass_reason,
    wait_seconds,
    waits_elsewhere,
)
from gitgate.loop.shardturn import RECORDS_KEY, ShardTurn
from gitgate.loop.snapshot import published
from gitgate.passes.fencing import Fence
from gitgate.passes.onepass import reconcile
from gitgate.passes.requests import ReconcileRequests, Watching
from gitgate.passes.shards import Membership
from gitgate.render.cache import RenderCache
from gitgate.render.tools import Tools
from gitgate.source.git import GitSource
from gitgate.source.localgit import LocalCheckout
from gitgate.status.metrics import LoopMetrics
from gitgate.status.notify import Notifier
from gitgate.status.published import Published

log = logging.getLogger("gitgate")


def fetched(source: GitSource | LocalCheckout) -> str:
    """The source's head after a fetch. What the checkout on disk cannot take (a commit that
    turns a folder gitgate writes into into a file, a full disk) is a failed fetch like any
    other: the revision in force stays, and the loop tries again."""
    try:
        return source.sync()
    except OSError as exc:
        raise SourceError(f"cannot update the checkout: {exc.strerror or exc}"
                          + (f" ({exc.filename})" if exc.filename else "")) from exc


class Reconciler:
    """The loop, built whole here: `shards` (`--shard`: every replica reconciles a share),
    `leader_renew_deadline` (with a leader Lease: a fence over the loop's writes, kept fresh
    by the Lease's renewals: `lease_callbacks`),
    `notifier`, `charts` (the fetch stage's store), `render_cache` and `records` (the
    records' cache, `RecordCache`) are its parts; `wake`
    is the event that starts the next turn early (given when a part built before the loop
    wakes it)."""

    def __init__(self, source: GitSource | LocalCheckout, cluster: ClusterPort, tools: Tools,
                 settings: LoopSettings, *, clock: Callable[[], datetime] | None = None,
                 metrics: LoopMetrics | None = None,
                 api_probe: Callable[[], object] | None = None,
                 shards: Membership | None = None, leader_renew_deadline: float | None = None,
                 notifier: Notifier | None = None, charts: ChartFetcher | None = None,
                 render_cache: RenderCache | None = None,
                 records: RecordCache | None = None,
                 wake: threading.Event | None = None):
        if settings.commit_halts and not isinstance(source, GitSource):
            raise ValueError("commit_halts pushes to the remote the loop follows: it needs "
                             "a GitSource")
        self.source = source
        self.cluster = cluster
        # a cheap read that proves the API server answers gitgate (raises GitgateError if not)
        self.api_probe = api_probe or (lambda: cluster.get("v1", "Namespace", "", "default"))
        self.tools = tools
        self.settings = settings
        self.clock = clock or (lambda: datetime.now(UTC))
        self.metrics = metrics or LoopMetrics(tool_versions={
            "helm": tools.helm_version, "kustomize": tools.kustomize_version})
        self.state = LoopState()
        # replaced whole by `publish`, once per turn of `run`
        self.published = Published(repo=source.display_url, branch=source.branch)
        self.render_cache = render_cache or RenderCache()
        self.charts = charts  # the fetch stage's store: `--cache-dir`-charts
        self.wake = wake or threading.Event()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        instance = settings.apply.instance
        self.requests: ReconcileRequests | None = None  # `gitgate reconcile` via the API
        fence = Fence(leader_renew_deadline) if leader_renew_deadline is not None else None
        self.records = records  # `gitgate run`'s records' cache (None: read afresh)
        self.turns = ShardTurn(cluster, instance, self.state, self.metrics, shards, fence,
                               self.records)
        self.reporter = PassReporter(self.metrics, notifier)
        self.observer = Observer(cluster, instance, self.state, self.metrics, self.turns,
                                 settings.status_interval, self.clock, self.wake, self.records)
        self.head = HeadTrust(source, cluster, instance, self.state, self.reporter, self.turns)
        self.documents = LoopDocuments(cluster, instance, self.state, self.turns, source,
                                       settings.path)
        self.freezes = FreezeWatch(source, settings.path, self.stop)
        self.rollbacks = RollbackOnFailure(  # onFailure: rollback
            lambda: halt_repo(self._git_source(), settings.path, tools))
        self._migrated = False  # records of an earlier release were looked for and moved
        self.metrics.interval.set(settings.interval.total_seconds())

    @property
    def shards(self) -> Membership | None:
        return self.turns.shards

    @property
    def notifier(self) -> Notifier | None:
        return self.reporter.notifier

    def lease_callbacks(self) -> tuple[Callable[[float], object], Callable[[], None]]:
        """With a leader fence: what the elector calls on each renewal (its monotonic send
        time) and when the Lease is lost."""
        fence = self.turns.fence
        assert fence is not None, "built without leader_renew_deadline"
        return (lambda at: fence.renewed(at=at)), fence.lapse

    def watch_requests(self, watcher: Watching) -> threading.Thread:
        """Watch this instance's Bundles for `gitgate reconcile` requests: each one makes the
        next tick a pass, at once, acknowledged in the Bundle's status when it is done. What
        the watch sends feeds the records' cache (`WatchFeed`): another writer's change (the
        other replicas' passes and observations) is not read again by the next pass, and
        once the watch has reached the version a pass's list of the records must be at least
        as new as, the watch's names and versions are that list (no request)."""
        self.requests = ReconcileRequests(self.cluster, watcher, self.settings.apply.instance,
                                          self.request_pass, feed=WatchFeed(self.records)
                                          if self.records is not None else None)
        thread = threading.Thread(target=self.requests.watch_forever, args=(self.stop,),
                                  name="gitgate-requests", daemon=True)
        thread.start()
        return thread

    def watch_newer(self) -> threading.Thread:
        """Look for a newer head while a pass writes: every `freeze_check`, and at once on a
        webhook."""
        return self.freezes.watch(self.settings.freeze_check.total_seconds())

    # ------------------------------------------------------------------ one tick
    def tick(self) -> str | None:
        """Fetch, and run a pass if one is due. Returns why a pass ran, or None."""
        with self._lock:
            now = self.clock()
            try:
                self.head.restore_anchors()
                revision = fetched(self.source)
                self.head.note_signature(revision)
                self.head.note_gates()
                self.metrics.record_fetch(True, now.timestamp())
            except GitgateError as exc:
                self.head.note_signature(None)
                self.metrics.record_fetch(False, now.timestamp())
                self.state.git_reachable = False
                self.state.requested = False
                self.state.passes += 1
                self._failed(now, Reason.SOURCE_FAILED, exc.message,
                             next_try=now + self.settings.interval)
                return None
            self.state.git_reachable = True
            reason = pass_reason(self.state, revision, now, self.settings.resync)
            if reason is not None:
                taken = self.requests.take() if self.requests is not None else {}
                self.state.requested = self.state.rollout_retry = False
                self._pass(now, revision, reason)
                self.state.passes += 1
                if taken and self.requests is not None:
                    self.requests.acknowledge(taken)
            # after a first pass made gitgate's namespace
            self.documents.keep("provenance", self.head.provenance(revision), "`status`")
            self.head.note_head(revision, now)
            return reason

    def _pass(self, now: datetime, revision: str, reason: str) -> None:
        started = time.monotonic()
        root = self.source.cache_dir / self.settings.path
        try:
            options = replace(self.settings.apply, now=now, resync=self.settings.resync,
                              share_moved=self.turns.moved_since())
            turn = self.turns.acting()
            cluster = self.turns.pass_cluster()
            with self.freezes.writing(revision):
                done = reconcile(root, self.tools, cluster, options,
                                 bundle_glob=self.settings.bundles, revision=revision,
                                 cache=self.render_cache, stop=self.stop, keep_inventories=True,
                                 migrate_records=not self._migrated
                                 and self.turns.owns(RECORDS_KEY),
                                 shard=turn.owns if turn is not None else None,
                                 late=lambda: self.freezes.newer, charts=self.charts,
                                 records=self.records)
        except GitgateError as exc:
            self.state.api_reachable = exc.reason not in API_DOWN
            self.state.failure = exc
            self._failed(now, exc.reason, exc.message)
            return
        self.state.failure = None
        # a pass that ran moved every earlier record over (with --shard: the owner's pass)
        self._migrated = self._migrated or self.turns.owns(RECORDS_KEY)
        plan, result = done.plan, done.result
        assert result is not None  # a pass that ran has a result
        self.state.api_reachable = not any(b.reason in API_DOWN for b in result.bundles)
        duration = time.monotonic() - started
        self.documents.note_overview(plan)
        if self.shards is not None:
            self.metrics.shard_bundles.set(len(plan.bundles))
        self.state.last_plan, self.state.last_result = plan, result
        if self.settings.commit_halts:
            assert isinstance(self.source, GitSource)  # checked when the loop was made
            if commit_halts(self.source, self.settings.path, self.tools, plan, now):
                self.wake.set()  # fetch it at once: the gate takes over the halt
            if commit_rollbacks(self.rollbacks, self.cluster, self.notifier, plan,
                                result.inventories or {}, now):
                self.wake.set()  # fetch it at once
        self.state.last_pass, self.state.last_reason = now, reason
        self.state.next_transition = next_transition(plan, now)
        self.state.next_check = next_check(plan, now)
        self.reporter.passed(plan, result, revision, reason, now, duration,
                             tells_gates=self.turns.owns("gitgate.gates"))
        if result.ok:
            self.state.revision, self.state.failures, self.state.retry_at = revision, 0, None
            self.state.last_error = ""
        elif waits_elsewhere(plan, result):
            # only dependents of another replica's (or --bundle's) bundles that have not gone
            # out yet: nothing of this replica failed; look again soon, with no backoff
            self.state.retry_at = now + self.settings.backoff_base
            self.state.revision = revision
            self.reporter.waiting(result)
        else:
            self._failed(now, Reason.PASS_FAILED, "; ".join(
                f"{b.bundle}: {b.reason}: {b.message}" for b in result.bundles if b.failed)
                or "prune blocked", count_metric=False)
            self.state.revision = revision

    def _failed(self, now: datetime, reason: Reason, message: str, *,
                count_metric: bool = True, next_try: datetime | None = None) -> None:
        """Record a failure; the log says when it is tried again: a failed pass after its
        backoff, a failed fetch at `next_try` (the next interval: fetching is cheap)."""
        self.state.failures += 1
        self.state.retry_at = now + backoff(self.state.failures, self.settings.backoff_base,
                                            self.settings.backoff_cap)
        self.state.last_error = f"{reason}: {message}"
        self.reporter.failed(reason, message, next_try or self.state.retry_at,
                             count_metric=count_metric)

    # ------------------------------------------------------------------ forever
    def _git_source(self) -> GitSource:
        assert isinstance(self.source, GitSource)  # checked when the loop was made
        return self.source

    def trigger(self) -> None:
        """A webhook: fetch now (a pass that is writing looks for new freezes at once)."""
        self.wake.set()
        self.freezes.peek_wake.set()

    def publish(self) -> None:
        """Publish what this turn of `run` left (`Published`), in one assignment."""
        self.published = published(self.state, self.clock(), repo=self.source.display_url,
                                   branch=self.source.branch, sharded=self.shards is not None)

    def request_pass(self) -> int:
        """`gitgate reconcile`: a pass now, due or not. Returns the passes run before it, so
        a caller can wait for the next one."""
        passes = self.state.passes
        self.state.requested = True
        self.wake.set()
        return passes

    def probe(self) -> None:
        """A standby's readiness: fetch (which also keeps its checkout warm for a takeover)
        and ask the API server one cheap question."""
        with self._lock:
            now = self.clock()
            try:
                fetched(self.source)
                self.state.git_reachable = True
                self.metrics.record_fetch(True, now.timestamp())
            except GitgateError as exc:
                self.state.git_reachable = False
                self.metrics.record_fetch(False, now.timestamp())
                log.warning("standby cannot fetch: %s", exc.message,
                            extra={"event": "probe", "reason": exc.reason})
            try:
                self.api_probe()
                self.state.api_reachable = True
            except GitgateError as exc:
                self.state.api_reachable = False
                log.warning("standby cannot use the API server: %s", exc.message,
                            extra={"event": "probe", "reason": exc.reason})
            self.state.last_probe = self.clock()

    def shutdown(self) -> None:
        """Stop the loop and its watchers (a signal handler's call)."""
        self.stop.set()
        self.wake.set()
        self.freezes.peek_wake.set()

    def run(self, is_leader: Callable[[], bool] = lambda: True,
            until: Callable[[], bool] | None = None,
            lease_problem: Callable[[], str | None] = lambda: None) -> None:
        """Reconcile while leading, stand by otherwise, until stopped or until `until` says
        the loop is done (`apply --wait`: settled)."""
        was_leader: bool | None = None
        while not self.stop.is_set():
            try:
                was_leader = self._round(is_leader, lease_problem, until, was_leader)
            except _Settled:
                break
            except Exception as exc:  # only a stop ends the loop; the error is said and retried
                if until is not None:
                    raise  # run until settled (`apply --wait`): a bug surfaces, as in apply
                log.exception("unexpected error in the loop: %s", exc)
                self._failed(self.clock(), Reason.INTERNAL_ERROR, str(exc))
                self.wake.wait(backoff(self.state.failures, self.settings.backoff_base,
                                       self.settings.backoff_cap).total_seconds())
                self.wake.clear()
        log.info("shutting down", extra={"event": "shutdown"})

    def _round(self, is_leader: Callable[[], bool], lease_problem: Callable[[], str | None],
               until: Callable[[], bool] | None, was_leader: bool | None) -> bool:
        """One turn of `run`: a pass or a standby's probe, then the wait for the next."""
        self._note_lease(lease_problem())
        leading = self.state.leading = is_leader()
        self.metrics.leader.set(1 if leading else 0)
        if leading != was_leader:
            self.head.anchored = self.head.anchored and leading  # read again when it leads
            log.info("became leader" if leading else "standing by",
                     extra={"event": "leader" if leading else "standby"})
            was_leader = leading
        if leading and self.shards is not None and not self.turns.take():
            self.wake.wait(self.shards.retry_period)
            self.wake.clear()
            return leading
        if leading:
            try:
                passed = self.tick() is not None
                if passed:
                    give_back()  # what the pass freed, before a read of Karmada
                self.observer.after_tick(passed)
            except Exception as exc:  # keep the loop alive; the error is logged once
                if until is not None:
                    raise  # run until settled (`apply --wait`): a bug surfaces, as in apply
                log.exception("unexpected error in a pass: %s", exc)
                self._failed(self.clock(), Reason.INTERNAL_ERROR, str(exc))
            if until is not None and until():
                raise _Settled
        elif (self.state.last_probe is None
              or self.clock() - self.state.last_probe >= self.settings.interval):
            self.probe()
        self.publish()
        now = self.clock()
        wake_at = next_wake(self.state, now, self.settings.interval,
                            self.settings.status_interval if leading else None)
        self.wake.wait(wait_seconds(wake_at, now, leading, is_leader()))
        self.wake.clear()
        return leading

    def _note_lease(self, problem: str | None) -> None:
        """A Lease that cannot be read or written makes the replica unready; said once per
        change."""
        if problem != self.state.lease_problem:
            if problem is None:
                log.info("the Lease can be used again", extra={"event": "lease"})
            else:
                log.warning("not ready: %s", problem, extra={"event": "lease"})
        self.state.lease_problem = problem


class _Settled(Exception):
    """`run`'s `until` says the loop is done."""


def cache_dir_default() -> Path:
    return Path.home() / ".cache" / "gitgate" / "repo"
