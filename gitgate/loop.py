"""`gitgate run`: follow a Git branch and reconcile forever.

A pass runs when the revision changes, when a gate changes state with time (an `until`
passes, a window opens or closes: the loop wakes up for it), when the resync timer is due, and
after a failure once its back-off has passed. A failed fetch or render keeps the last applied
state: nothing is pruned for it. The clock is a parameter.
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gitgate.apply.bundlerecord import OBSERVER, clusters_status
from gitgate.apply.fencing import Fence, FencedCluster
from gitgate.apply.inventory import Inventory
from gitgate.apply.ledger import (
    WatchFeed,
    read_inventories,
    read_records_consistently,
    remember_written,
)
from gitgate.apply.observe import Observation, ReadStopped, Stoppable, observe_following
from gitgate.apply.ports import ClusterPort
from gitgate.apply.work import ApplyOptions, PassResult
from gitgate.charts.stage import ChartFetcher
from gitgate.errors import GitgateError, Reason, SourceError
from gitgate.gitops.failurerollback import (
    RollbackOnFailure,
    record_rollback,
    rollback_message,
    wants_rollback,
)
from gitgate.gitops.workflow import GitRepo, pause
from gitgate.heap import give_back
from gitgate.model import Verdict
from gitgate.passes.onepass import reconcile
from gitgate.passes.recorded import (
    delete_part,
    provenance_document,
    read_document,
    read_parts,
    record_document,
    record_part,
)
from gitgate.passes.requests import ReconcileRequests, Watching
from gitgate.passes.shards import Membership, Turn
from gitgate.plan import Plan
from gitgate.progression.livefreeze import NewerFreezes, merged, read_freezes
from gitgate.progression.rollouts import retries_requested
from gitgate.render.cache import RenderCache
from gitgate.render.tools import Tools
from gitgate.source.anchors import TrustAnchors
from gitgate.source.gateguard import GateReport
from gitgate.source.git import GitSource, LocalCheckout, content_commit
from gitgate.source.signatures import Signature
from gitgate.status.metrics import LoopMetrics
from gitgate.status.notify import Notifier, expiring_messages, pass_messages, unsigned_message
from gitgate.status.overview import overview_document

log = logging.getLogger("gitgate")
RECORDS_KEY = "gitgate.records"  # with --shard: the replica that moves earlier releases' records

# reasons that say the API server cannot be used at all (not that one object failed)
API_DOWN = frozenset({Reason.API_UNREACHABLE, Reason.API_TIMEOUT, Reason.API_UNAUTHORIZED})


@dataclass(frozen=True)
class LoopSettings:
    path: str = "."
    interval: timedelta = timedelta(minutes=1)
    resync: timedelta = timedelta(minutes=10)
    backoff_base: timedelta = timedelta(seconds=5)
    backoff_cap: timedelta = timedelta(minutes=5)
    status_interval: timedelta = timedelta(seconds=30)  # re-read Karmada's bindings this often
    commit_halts: bool = False  # commit a hold gate for each rollout that halts, and push it
    bundles: str | None = None  # a glob: only these bundles (`apply --bundle`)
    # while a pass writes, how often the remote is asked for a newer head whose freeze files
    # stop what they cover at once (a webhook asks at once too; zero: only a webhook)
    freeze_check: timedelta = timedelta(seconds=1)
    apply: ApplyOptions = field(default_factory=lambda: ApplyOptions(now=datetime.now(UTC)))


@dataclass
class LoopState:
    revision: str | None = None  # last revision reconciled without failure
    last_pass: datetime | None = None
    next_transition: datetime | None = None  # when a gate next starts or ends
    next_check: datetime | None = None  # when a rollout or a sync should be looked at again
    failures: int = 0
    retry_at: datetime | None = None
    git_reachable: bool = False  # the last fetch worked
    api_reachable: bool = False  # the last contact with the API server worked
    last_probe: datetime | None = None  # a standby's last look at Git and the API
    requested: bool = False  # `gitgate reconcile` asked for a pass
    rollout_retry: bool = False  # `gitgate resume` asked a halted rollout to retry its wave
    passes: int = 0  # ticks that ran a pass or failed to fetch
    leading: bool = False
    lease_problem: str | None = None  # why the leader Lease cannot be read or written
    last_reason: str = ""
    last_error: str = ""
    failure: GitgateError | None = None  # why the last pass could not run (None: it ran)
    last_result: PassResult | None = None
    last_plan: Plan | None = None
    observation: Observation | None = None  # what Karmada last reported of each bundle
    inventories: Mapping[str, Inventory] | None = None  # as last read or left by a pass
    signature: Signature | None = None  # with --verify-commits: of the branch's last head
    gate_report: GateReport | None = None  # with --gate-signers: where the freeze files come from
    last_observed: datetime | None = None  # the last read of Karmada, of some bundles or all
    observed_all: datetime | None = None  # the last read of every bundle (or of the share)
    # what a stopped read of Karmada did not get to, for the next read (None: all of them)
    unread: set[str] | None = field(default_factory=set)
    overview: dict[str, Any] | None = None  # gates, rollouts, last changes (status.overview)
    turn: Turn | None = None  # with --shard: this replica's share, as last agreed

    @property
    def ready(self) -> bool:
        """Can serve: Git and the API server answer and the Lease can be used (leader and
        standby alike)."""
        return self.git_reachable and self.api_reachable and self.lease_problem is None


@dataclass(frozen=True)
class Published:
    """What the loop knew at the end of one turn of `run` (a pass and the read of Karmada
    after it, or a standby's probe), published whole for readers on other threads: the web
    page renders one of these, never the state a pass is changing."""

    at: datetime | None = None  # None: nothing published yet
    leading: bool = False
    revision: str | None = None
    last_error: str = ""
    observation: Observation | None = None
    inventories: Mapping[str, Inventory] = field(default_factory=lambda: MappingProxyType({}))
    overview: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    signature: Signature | None = None
    gate_report: GateReport | None = None
    failed: frozenset[str] = frozenset()  # bundles the last pass failed


def backoff(failures: int, base: timedelta, cap: timedelta) -> timedelta:
    """`base` doubled for each failure after the first, never more than `cap`, for any number
    of failures (the doubling stops once it reaches the cap, so it cannot overflow)."""
    grown = base
    for _ in range(max(0, failures - 1)):
        if grown >= cap:
            break
        grown *= 2
    return min(cap, grown)


def waits_elsewhere(plan: Plan, result: PassResult) -> bool:
    """The pass failed only bundles that wait for a dependency written elsewhere (another
    replica's shard), directly or through one another: a wait, not a failure to back off
    from. A dependency on a name nobody knows is a mistake, and backs off (pure)."""
    failed = [b for b in result.bundles if b.failed]
    needs = {b.bundle.name: set(b.bundle.source.options.depends_on) for b in plan.bundles}
    known = set(needs) | plan.elsewhere
    return (bool(plan.elsewhere) and bool(failed) and not result.prune_blocked
            and all(b.reason == Reason.DEPENDENCY_NOT_READY
                    and needs.get(b.bundle, set()) <= known for b in failed)
            and any(needs.get(b.bundle, set()) & plan.elsewhere for b in failed))


def pass_reason(state: LoopState, revision: str, now: datetime,
                resync: timedelta) -> str | None:
    """Why a pass is due now, or None (pure)."""
    if state.requested:
        return "requested"
    if state.retry_at is not None:
        return "retry" if now >= state.retry_at else None
    if state.revision != revision:
        return "revision"
    if state.rollout_retry:
        return "rollout-retry"
    if state.next_transition is not None and now >= state.next_transition:
        return "gate-transition"
    if state.next_check is not None and now >= state.next_check:
        return "progress-check"
    if state.last_pass is None or now - state.last_pass >= resync:
        return "resync"
    return None


def next_wake(state: LoopState, now: datetime, interval: timedelta,
              status_interval: timedelta | None = None) -> datetime:
    """The next poll, earlier when a gate transition, a retry or a status read comes first
    (pure)."""
    candidates = [now + interval]
    status_due = (state.observed_all + status_interval
                  if status_interval is not None and state.observed_all is not None else None)
    for moment in (state.next_transition, state.next_check, state.retry_at, status_due):
        if moment is not None:
            candidates.append(max(moment, now))
    return min(candidates)


STANDBY_CHECK = 1.0  # seconds: how soon a standby, or a replica whose role changed, looks again


def wait_seconds(wake_at: datetime, now: datetime, was_leading: bool, leading: bool) -> float:
    """How long the loop sleeps (pure). A standby looks again within STANDBY_CHECK; so does a
    replica that became leader during this turn (its first pass must not wait a whole
    interval: the turn was planned as a standby's)."""
    timeout = max(0.05, (wake_at - now).total_seconds())
    if not (was_leading and leading):
        timeout = min(timeout, STANDBY_CHECK)
    return timeout


def next_transition(plan: Plan, now: datetime) -> datetime | None:
    """When a gate next starts or ends (pure)."""
    changes = [s.next_change for s in plan.gates
               if s.next_change is not None and s.next_change > now]
    return min(changes) if changes else None


def next_check(plan: Plan, now: datetime) -> datetime | None:
    """When a rollout (a wave's bake or deadline) or a sync with hooks should be looked at
    again (pure): no gate changes then."""
    checks = [c for b in plan.bundles for c in (b.rollout.next_check if b.rollout else None,
                                                b.hooks.next_check if b.hooks else None)
              if c is not None and c > now]
    return min(checks) if checks else None


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
    def __init__(self, source: GitSource | LocalCheckout, cluster: ClusterPort, tools: Tools,
                 settings: LoopSettings, *, clock: Callable[[], datetime] | None = None,
                 metrics: LoopMetrics | None = None,
                 api_probe: Callable[[], object] | None = None):
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
        self.published = Published()  # replaced whole by `publish`, once per turn of `run`
        self.render_cache = RenderCache()
        self.charts: ChartFetcher | None = None  # the fetch stage's store: `--cache-dir`-charts
        self.wake = threading.Event()
        self.rollbacks = RollbackOnFailure(self._halt_repo)  # onFailure: rollback
        self.stop = threading.Event()
        self._lock = threading.Lock()
        # gitgate.provenance and gitgate.overview as last written (an empty provenance:
        # nothing to say, nothing written)
        self._recorded: dict[str, dict[str, Any]] = {"provenance": {}}
        self._clusters_recorded: dict[str, Any] = {}  # per bundle, the clusters last written
        self._clusters_unrecorded: set[str] = set()
        self.requests: ReconcileRequests | None = None  # `gitgate reconcile` via the API
        self.notifier: Notifier | None = None  # --notify-urls-file: people told of transitions
        self.shards: Membership | None = None  # --shard: every replica reconciles a share
        # with a leader Lease (no --shard): the fence its renewals keep fresh, so that a
        # leader that lost the Lease writes nothing more, in a pass or outside one
        self.fence: Fence | None = None
        self._acting_on = ""  # the assignment this replica's last pass acted on
        self._migrated = False  # records of an earlier release were looked for and moved
        self._unapplied: tuple[str, datetime] | None = None  # the head not reconciled, since
        self._anchored = False  # the recorded trust anchors were handed to the source
        # while a pass writes: its revision, and the freeze files of a newer head of the
        # remote (`peek_newer`), which the pass checks before each write
        self._writing: str | None = None
        self._peeked = ""
        self.newer: NewerFreezes | None = None
        self.peek_wake = threading.Event()
        self._peek_lock = threading.Lock()
        self.metrics.interval.set(settings.interval.total_seconds())

    def watch_requests(self, watcher: Watching) -> threading.Thread:
        """Watch this instance's Bundles for `gitgate reconcile` requests: each one makes the
        next tick a pass, at once, acknowledged in the Bundle's status when it is done. What
        the watch sends feeds the records' cache (`WatchFeed`): another writer's change (the
        other replicas' passes and observations) is not read again by the next pass, and
        once the watch has reached the version a pass's list of the records must be at least
        as new as, the watch's names and versions are that list (no request)."""
        self.requests = ReconcileRequests(self.cluster, watcher, self.settings.apply.instance,
                                          self.request_pass, feed=WatchFeed())
        thread = threading.Thread(target=self.requests.watch_forever, args=(self.stop,),
                                  name="gitgate-requests", daemon=True)
        thread.start()
        return thread

    # ------------------------------------------------------------------ one tick
    def tick(self) -> str | None:
        """Fetch, and run a pass if one is due. Returns why a pass ran, or None."""
        with self._lock:
            now = self.clock()
            try:
                self._restore_anchors()
                revision = fetched(self.source)
                self._note_signature(revision)
                self._note_gates()
                self.metrics.record_fetch(True, now.timestamp())
            except GitgateError as exc:
                self._note_signature(None)
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
            self._record_provenance(revision)  # after a first pass made gitgate's namespace
            self._note_head(revision, now)
            return reason

    def _note_head(self, in_force: str, now: datetime) -> None:
        """Since when the branch's head is not reconciled without failure (an unverified
        head counts: the revision in force is another), for the alert on a head that does
        not go out."""
        signature, gates = self.state.signature, self.state.gate_report
        head = signature.commit if signature is not None else in_force
        if gates is not None and gates.head_refused:
            head = gates.head
        result = self.state.last_result
        applied = (head == in_force == self.state.revision and self.state.failure is None
                   and result is not None and result.ok)
        if applied:
            self._unapplied = None
            self.metrics.head_unapplied.set(0)
            return
        if self._unapplied is None or self._unapplied[0] != head:
            self._unapplied = (head, now)
        self.metrics.head_unapplied.set(self._unapplied[1].timestamp())

    def _note_signature(self, in_force: str | None) -> None:
        """With --verify-commits: say once per commit when the branch's head is not signed by
        an allowed key and which earlier commit stays in force (`in_force`; None: none)."""
        signature = getattr(self.source, "signature", None)
        previous = self.state.signature
        if in_force is not None:  # a fetch that worked says whether it is checked at all
            self.state.signature = signature
        if signature is None:
            return
        self.metrics.head_verified.set(1 if signature.trusted else 0)
        if signature.trusted or (previous is not None and previous == signature):
            return
        kept = f"{in_force[:12]} stays in force" if in_force else "nothing is applied"
        if self.notifier is not None and self._owns("gitgate.provenance"):
            self.notifier.offer([unsigned_message(signature.said(), signature.commit,
                                                  in_force)])
        log.warning("not applied: %s; %s", signature.said(), kept,
                    extra={"event": "unverified", "commit": signature.commit,
                           "key": signature.key or None, "inForce": in_force})

    def _note_gates(self) -> None:
        """With --gate-signers: say once per head which freeze files were put back because a
        commit without a gate signer's signature changed them."""
        report = getattr(self.source, "gate_report", None)
        previous = self.state.gate_report
        self.state.gate_report = report
        if report is None:
            return
        self.metrics.gates_trusted.set(0 if report.refused else 1)
        if report.refused and (previous is None or previous.head != report.head
                               or previous.refused != report.refused):
            log.warning("%s", report.said(), extra={
                "event": "untrusted-gates", "commit": report.head,
                "refused": [r.commit for r in report.refused]})

    def _restore_anchors(self) -> None:
        """Once per term as leader, before a head is judged: hand the source the trust anchors
        recorded on the API server, so that a restart (or a new replica) judges against the
        revisions the loop last trusted, not against the first head it sees. Raises
        GitgateError while the record cannot be read (nothing is judged meanwhile)."""
        source = self.source
        if self._anchored or not isinstance(source, GitSource) or not source.judges:
            return
        try:
            recorded = read_document(self.cluster, self.settings.apply.instance, "provenance",
                                     strict=True)
        except ValueError:
            raise SourceError("the gitgate.provenance record is not JSON: nothing is judged "
                              "until it is repaired or deleted") from None
        except GitgateError as exc:
            raise SourceError(f"cannot read the trust anchors recorded in gitgate.provenance: "
                              f"{exc.message}") from None
        anchors = TrustAnchors.from_dict((recorded or {}).get("anchors"))
        if anchors is not None and anchors.source != source.anchor_source:
            log.warning("the trust anchors recorded are of %s, not %s: this loop starts from "
                        "the branch's head", anchors.source, source.anchor_source,
                        extra={"event": "anchors-not-restored"})
            anchors = None
        source.restore(anchors)
        self._anchored = True

    def _record_provenance(self, in_force: str) -> None:
        """Keep what `status` shows of signatures and freeze files on the API server, with
        the trust anchors they were judged against (`_restore_anchors` reads them back)."""
        doc = provenance_document(self.state.signature, self.state.gate_report, in_force)
        anchors = getattr(self.source, "anchors", None)
        if doc and isinstance(anchors, TrustAnchors):
            doc["anchors"] = replace(
                anchors, verified=anchors.verified if self.state.signature else "",
                gates=anchors.gates if self.state.gate_report else "").as_dict()
        self._keep("provenance", doc, "`status`")

    def _note_overview(self, plan: Plan) -> None:
        """The page's gates, rollouts and last changes after this pass, kept on the API
        server for `gitgate ui` (the last changes a previous loop recorded are read once, so a
        restart keeps them)."""
        part = self.shards.identity if self.shards is not None else None
        instance = self.settings.apply.instance
        known = self.state.overview
        if known is None:
            known = (read_parts(self.cluster, instance, "overview").get(part) if part
                     else read_document(self.cluster, instance, "overview")) or {}
        self.state.overview = overview_document(plan, self.state.last_plan,
                                                known.get("changes") or {},
                                                self._blame(self.state.last_plan, plan))
        self._keep("overview", self.state.overview, "`gitgate ui`", part)

    def fenced_by_lease(self, renew_deadline: float
                        ) -> tuple[Callable[[float], object], Callable[[], None]]:
        """With a leader Lease: a fence over this loop's writes, kept fresh by the Lease's
        renewals. Returns what the elector calls on each renewal (its monotonic send time) and
        when the Lease is lost."""
        fence = self.fence = Fence(renew_deadline)
        return (lambda at: fence.renewed(at=at)), fence.lapse

    def _blame(self, previous: Plan | None, plan: Plan) -> Callable[[str], str | None]:
        """Which commit since `previous` changed a bundle's folder (its content), not a
        commit of the gates that came with it."""
        since = previous.revision if previous is not None else ""
        gates = tuple(sorted({posixpath.dirname(s.gate.file) or "." for s in plan.gates}
                             | {"gates"}))
        root = self.source.cache_dir / self.settings.path
        deepened: list[bool] = []

        def blame(folder: str) -> str | None:
            if not deepened and isinstance(self.source, GitSource):
                self.source.deepen()  # a shallow fetch lacks the commits between
                deepened.append(True)
            return content_commit(root, since, plan.revision, folder, gates)
        return blame

    def _writer(self) -> ClusterPort | None:
        """Where the loop's writes outside a pass go (Bundle status, its documents, the
        overview's parts): with --shard, through the fence of the term this replica acts in,
        so a replica whose Lease lapsed writes nothing for its former share (None: it may not
        write now)."""
        if self.shards is None:
            if self.fence is None:
                return self.cluster
            term = self.fence.term()
            return None if term is None else FencedCluster(self.cluster, self.fence, term)
        turn = self.state.turn
        if turn is None or turn.term is None or not turn.acting:
            return None
        return FencedCluster(self.cluster, self.shards.fence, turn.term)

    def _owns(self, key: str) -> bool:
        """Whether this replica writes what `key` names (always, without --shard)."""
        turn = self.state.turn
        return self.shards is None or (turn is not None and turn.acting and turn.owns(key))

    def _keep(self, what: str, doc: dict[str, Any], reader: str,
              part: str | None = None) -> None:
        """Record `doc` as gitgate.<what> when it changed since last written (with --shard,
        by the one replica whose shard holds it; or, with a `part`, this replica's part of
        it); a failed write is said and tried again."""
        if doc == self._recorded.get(what) or (part is None
                                               and not self._owns(f"gitgate.{what}")):
            return
        writer = self._writer()
        if writer is None:
            return
        try:
            if part is None:
                record_document(writer, self.settings.apply.instance, what, doc)
            else:
                record_part(writer, self.settings.apply.instance, what, part, doc)
        except GitgateError as exc:
            log.warning("cannot record the %s for %s: %s", what, reader, exc.message,
                        extra={"event": f"{what}-unrecorded"})
            return
        self._recorded[what] = doc

    def _pass(self, now: datetime, revision: str, reason: str) -> None:
        started = time.monotonic()
        root = self.source.cache_dir / self.settings.path
        try:
            options = replace(self.settings.apply, now=now, resync=self.settings.resync,
                              share_moved=self._share_moved_since())
            turn = self.state.turn if self.shards is not None else None
            cluster: ClusterPort = self.cluster
            if turn is not None and turn.term is not None and self.shards is not None:
                cluster = FencedCluster(self.cluster, self.shards.fence, turn.term)
            elif self.fence is not None:  # a leader: its pass writes while its term lasts
                term = self.fence.term()
                cluster = FencedCluster(self.cluster, self.fence, -1 if term is None else term)
            with self._peek_lock:
                self._writing, self._peeked, self.newer = revision, revision, None
            try:
                done = reconcile(root, self.tools, cluster, options,
                                 bundle_glob=self.settings.bundles, revision=revision,
                                 cache=self.render_cache, stop=self.stop, keep_inventories=True,
                                 migrate_records=not self._migrated and self._owns(RECORDS_KEY),
                                 shard=turn.owns if turn is not None else None,
                                 late=lambda: self.newer, charts=self.charts)
            finally:
                with self._peek_lock:
                    self._writing, self.newer = None, None
        except GitgateError as exc:
            self.state.api_reachable = exc.reason not in API_DOWN
            self.state.failure = exc
            self._failed(now, exc.reason, exc.message)
            return
        self.state.failure = None
        # a pass that ran moved every earlier record over (with --shard: the owner's pass)
        self._migrated = self._migrated or self._owns(RECORDS_KEY)
        plan, result = done.plan, done.result
        assert result is not None  # a pass that ran has a result
        self.state.api_reachable = not any(b.reason in API_DOWN for b in result.bundles)
        duration = time.monotonic() - started
        self.metrics.pass_duration.observe(duration)
        self._note_overview(plan)
        if self.shards is not None:
            self.metrics.shard_bundles.set(len(plan.bundles))
        self.state.last_plan, self.state.last_result = plan, result
        if self.settings.commit_halts:
            self._commit_halts(plan, now)
            self._commit_rollbacks(plan, result.inventories or {}, now)
        self.state.last_pass, self.state.last_reason = now, reason
        self.state.next_transition = next_transition(plan, now)
        self.state.next_check = next_check(plan, now)
        verdicts = {b.bundle: (str(Verdict.FAILED) if b.failed else b.verdict)
                    for b in result.bundles if b.verdict != Verdict.REMOVED}
        self.metrics.record_verdicts(verdicts)
        self.metrics.record_gates({g.gate.name: g.active for g in plan.gates},
                                  {g.gate.name: g.gate.until.timestamp() for g in plan.gates
                                   if g.gate.until is not None})
        self.metrics.record_failures({b.bundle for b in result.bundles if b.failed},
                                     set(verdicts))
        if self.notifier is not None:
            self.notifier.offer([*pass_messages(result.transitions, revision),
                                 *(expiring_messages(plan.gates, now)
                                   if self._owns("gitgate.gates") else [])])
        self.metrics.record_applied([b.bundle for b in result.bundles
                                     if b.verdict == Verdict.APPLY and not b.failed],
                                    now.timestamp())
        self.metrics.forget_bundles(set(verdicts))
        self.metrics.record_revision(revision)
        self.metrics.applied.inc(sum(len(b.applied) for b in result.bundles))
        self.metrics.pruned.inc(sum(len(b.pruned) for b in result.bundles))
        for bundle in result.bundles:
            if bundle.failed:
                self.metrics.errors.labels(bundle.reason or Reason.FAILED).inc()
        counts = {v: sum(1 for x in verdicts.values() if x == v)
                  for v in (Verdict.APPLY, Verdict.HELD, Verdict.SUSPENDED, Verdict.HALTED,
                            Verdict.FAILED)}
        # a look at a waiting rollout or sync that changed nothing is said at debug level
        quiet = reason == "progress-check" and not result.transitions and not any(
            b.applied or b.pruned or b.failed for b in result.bundles)
        log.log(logging.DEBUG if quiet else logging.INFO,
                "pass revision=%s reason=%s applied=%d held=%d suspended=%d halted=%d "
                 "failed=%d duration=%.2fs", revision[:12], reason, counts[Verdict.APPLY],
                 counts[Verdict.HELD], counts[Verdict.SUSPENDED], counts[Verdict.HALTED],
                 counts[Verdict.FAILED],
                 duration,
                 extra={"event": "pass", "revision": revision, "reason": reason,
                        "bundles": counts, "duration": duration})
        if result.ok:
            self.state.revision, self.state.failures, self.state.retry_at = revision, 0, None
            self.state.last_error = ""
            self.metrics.last_success.set(now.timestamp())
        elif waits_elsewhere(plan, result):
            # only dependents of another replica's (or --bundle's) bundles that have not gone
            # out yet: nothing of this replica failed; look again soon, with no backoff
            self.state.retry_at = now + self.settings.backoff_base
            self.state.revision = revision
            log.info("waiting for dependencies another pass writes: %s", ", ".join(
                b.bundle for b in result.bundles if b.failed), extra={"event": "waiting"})
        else:
            if result.prune_blocked:
                self.metrics.errors.labels(Reason.PRUNE_BLOCKED).inc()
            self._failed(now, Reason.PASS_FAILED, "; ".join(
                f"{b.bundle}: {b.reason}: {b.message}" for b in result.bundles if b.failed)
                or "prune blocked", count_metric=False)
            self.state.revision = revision

    def _commit_halts(self, plan: Plan, now: datetime) -> None:
        """A halted rollout becomes a hold gate committed to the repo and pushed (the
        commit-to-pause workflow, done by gitgate): the halt is seen, reviewed and lifted in
        Git like any pause. Lifting that gate continues the wave."""
        source = self.source
        assert isinstance(source, GitSource)  # checked when the loop was made
        for item in plan.bundles:
            if item.rollout is None or not item.rollout.halted or wants_rollback(item):
                continue
            name = item.bundle.name
            repo = GitRepo(source.cache_dir / self.settings.path, self.tools, push=True,
                           env=tuple(source.auth.env().items()))
            try:
                source.ensure_identity()
                done = pause(repo, name, f"rollout {item.rollout.waiting_for}", now)
            except GitgateError as exc:
                log.warning("cannot commit the halt of %s: %s", name, exc.message,
                            extra={"event": "commit-halt", "bundle": name})
                continue
            if done.sha:
                log.info("committed a hold gate for the halted rollout of %s (%s)", name,
                         done.sha[:12], extra={"event": "commit-halt", "bundle": name,
                                               "commit": done.sha})
                self.wake.set()  # fetch it at once: the gate takes over the halt

    def _halt_repo(self) -> GitRepo:
        """The checkout a halt's commit is made in and pushed from."""
        source = self.source
        assert isinstance(source, GitSource)  # checked when the loop was made
        source.ensure_identity()
        return GitRepo(source.cache_dir / self.settings.path, self.tools, push=True,
                       env=tuple(source.auth.env().items()))

    def _commit_rollbacks(self, plan: Plan, inventories: Mapping[str, Inventory],
                          now: datetime) -> None:
        """`onFailure: rollback` (`gitops.failurerollback`): each committed rollback is
        fetched at once, and people are told which check failed and which commit rolled
        back."""
        for due, committed in self.rollbacks.commit(plan, inventories, now):
            record_rollback(self.cluster, inventories, due, committed, now)
            if self.notifier is not None:
                self.notifier.offer([rollback_message(due, committed)])
            self.wake.set()

    def _failed(self, now: datetime, reason: Reason, message: str, *,
                count_metric: bool = True, next_try: datetime | None = None) -> None:
        """Record a failure; the log says when it is tried again: a failed pass after its
        backoff, a failed fetch at `next_try` (the next interval: fetching is cheap)."""
        self.state.failures += 1
        self.state.retry_at = now + backoff(self.state.failures, self.settings.backoff_base,
                                            self.settings.backoff_cap)
        self.state.last_error = f"{reason}: {message}"
        if count_metric:
            self.metrics.errors.labels(reason).inc()
        again = next_try or self.state.retry_at
        log.warning("%s: %s (tried again at %s)", reason, message, again.isoformat(),
                    extra={"event": "failure", "reason": reason})

    # ------------------------------------------------------------------ Karmada's side
    def status_due(self, now: datetime) -> bool:
        last = self.state.observed_all
        return last is None or now - last >= self.settings.status_interval

    def refresh_status(self, inventories: Mapping[str, Inventory] | None = None,
                       changed: set[str] | None = None,
                       stop: Callable[[], bool] | None = None) -> None:
        """Read what Karmada did with each bundle (after every pass, and every
        `status_interval` when no pass runs), for /status and /metrics (with --shard, each
        bundle of this replica's share: the reads, the series and the memory follow the
        share, and no two replicas export one bundle's series); a `gitgate resume`
        retry request found in an inventory makes the next tick a pass. `inventories`: as
        the pass just left them (not read again), else read here. `changed`: the bundles a
        pass just changed; until the next read of all is due, only they and the bundles
        Karmada had not settled are read again (`observe_following`). `stop`: asked before
        each list; when it says so the read ends there and the last observation stays."""
        began = time.monotonic()
        self.metrics.karmada_reading.set(1)
        try:
            self._refresh_status(inventories, changed, stop)
        finally:
            self.metrics.karmada_reading.set(0)
            self.metrics.karmada_read.observe(time.monotonic() - began)

    def _refresh_status(self, inventories: Mapping[str, Inventory] | None,
                        changed: set[str] | None, stop: Callable[[], bool] | None) -> None:
        now = self.clock()
        self.state.last_observed = now
        if self.status_due(now) or changed is None or self.state.unread is None:
            changed = None
        else:
            changed = changed | self.state.unread
        try:
            if inventories is None:
                inventories = read_inventories(self.cluster, self.settings.apply.instance)
            if self.shards is not None:  # each replica observes its own share, no more
                inventories = {name: inventory for name, inventory in inventories.items()
                               if self._owns(name)}
            lister = self.cluster if stop is None else Stoppable(self.cluster, stop)
            observation = observe_following(lister, inventories.values(),
                                            self.state.observation, changed)
            if changed is None:
                self.state.observed_all = now
            self.state.unread = set()
            self.state.inventories = inventories
            if retries_requested(inventories):
                self.state.rollout_retry = True
                self.wake.set()
        except GitgateError as exc:
            observation = Observation(error=f"cannot read gitgate's inventories: {exc.message}")
        except ReadStopped:
            self.state.unread = None if changed is None else changed
            log.info("shard: the replicas changed during the read of Karmada; it is read "
                     "again after the pass over the new share", extra={"event": "observe-stopped"})
            return
        if observation.error:
            log.warning("%s", observation.error, extra={"event": "observe"})
        self.state.observation = observation
        self.metrics.record_dispatch(observation.bundles)
        if inventories is not None and not observation.error:
            self._record_clusters(inventories, observation)

    def after_tick(self, passed: bool) -> None:
        """Read Karmada after a pass, or when the status interval is up; not while this
        replica's share is moving (a peer left or came during the pass), and no further once
        the Lease thread sees it move during the read: a read of a share about to change would
        only delay the pass over the new one (a takeover waited a full read of 2,500 bundles,
        12 s), which reads Karmada in turn."""
        if not (passed or self.status_due(self.clock())):
            return
        if self._share_moving():
            log.info("shard: the replicas changed during the pass; Karmada is read after the "
                     "pass over the new share", extra={"event": "observe-deferred"})
            changed = self._pass_changes(passed)[1]
            unread = self.state.unread
            self.state.unread = None if changed is None or unread is None else unread | changed
            return
        self.observe_after(passed, self._share_moved_since())

    def _share_moved_since(self) -> Callable[[], bool] | None:
        """With --shard: a question a long read asks before each list, and a pass before each
        record that only follows the new revision, with no request of its own: has the Lease
        thread seen the assignment move (away from the one this replica acts on) since the
        read or pass began? None without --shard."""
        turn = self.state.turn
        if self.shards is None or turn is None or turn.shards is None:
            return None
        membership, acting_on = self.shards, turn.shards.digest
        began = membership.seen_assignment()

        def moved() -> bool:
            seen = membership.seen_assignment()
            return seen is not None and seen not in (began, acting_on)
        return moved

    def _share_moving(self) -> bool:
        """With --shard: whether the live replicas no longer match the assignment this
        replica last acted on (a read error says no: the status is read as usual)."""
        turn = self.state.turn
        if self.shards is None or turn is None or turn.shards is None:
            return False
        try:
            shards, _ = self.shards.settle()
        except GitgateError:
            return False
        return shards is not None and shards.digest != turn.shards.digest

    def observe_after(self, passed: bool, stop: Callable[[], bool] | None = None) -> None:
        """`refresh_status` after a tick: after a pass that ran, from the inventories it left
        and following the bundles it changed; else a read of all."""
        self.refresh_status(*self._pass_changes(passed), stop=stop)
        give_back()  # what the read freed (the lists it decoded)

    def _pass_changes(self, passed: bool
                      ) -> tuple[Mapping[str, Inventory] | None, set[str] | None]:
        """After a pass that ran: the inventories it left and the bundles it changed (None:
        it may have changed any); else (None, None): read them all."""
        result = self.state.last_result
        if passed and result is not None and self.state.failure is None:
            return result.inventories, result.changed()
        return None, None

    def _record_clusters(self, inventories: Mapping[str, Inventory],
                         observation: Observation) -> None:
        """What Karmada reports of each bundle, into its Bundle's status (for `kubectl get`'s
        CLUSTERS column), when it changed; a failed write is said once and tried again."""
        writer = self._writer()
        if writer is None:
            return
        for name, dispatch in observation.bundles.items():
            inventory = inventories.get(name)
            if inventory is None or not self._owns(name):
                continue
            written = clusters_status(inventory, dispatch)
            if self._clusters_recorded.get(name) == written:
                continue
            try:
                remember_written(writer.apply(written, manager=OBSERVER,
                                                    subresource="status").obj)
            except GitgateError as exc:
                if name not in self._clusters_unrecorded:
                    log.warning("cannot record what Karmada reports of %s in its Bundle: %s",
                                name, exc.message, extra={"event": "observe"})
                self._clusters_unrecorded.add(name)
                continue
            self._clusters_unrecorded.discard(name)
            self._clusters_recorded[name] = written

    # ------------------------------------------------------------------ --shard
    def _take_turn(self) -> bool:
        """Agree on the shards before a tick: False while this replica may not act (it
        waits for the others, or its Lease is not fresh); a new share makes the tick a pass."""
        assert self.shards is not None
        before = self.state.turn
        turn = self.state.turn = self.shards.turn()
        if before is None or before.said() != turn.said():
            log.info("shard: %s", turn.said(), extra={
                "event": "shard", "acting": turn.acting,
                "members": list(turn.shards.members) if turn.shards else []})
        self.metrics.shard_acting.set(1 if turn.acting else 0)
        self.metrics.shard_replicas.set(len(turn.shards.members) if turn.shards else 0)
        if not turn.acting or turn.shards is None:
            return False
        if turn.shards.digest != self._acting_on:
            self._acting_on = turn.shards.digest
            read_records_consistently()  # what a former holder wrote last is read as written
            self.state.requested = True  # a new share: reconcile it now
            if turn.owns("gitgate.overview"):
                self._drop_departed_parts(turn.shards.members)
        return True

    def _drop_departed_parts(self, members: tuple[str, ...]) -> None:
        """The overview parts of replicas no longer in the assignment (stopped, or killed),
        deleted by the one replica that holds the overview: the page ignores them anyway."""
        instance = self.settings.apply.instance
        for part in sorted(set(read_parts(self.cluster, instance, "overview")) - set(members)):
            try:
                delete_part(self._writer() or self.cluster, instance, "overview", part)
            except GitgateError as exc:
                log.warning("cannot delete the overview part of departed replica %s: %s",
                            part, exc.message, extra={"event": "overview-unrecorded"})

    # ------------------------------------------------------------------ forever
    def trigger(self) -> None:
        """A webhook: fetch now (a pass that is writing looks for new freezes at once)."""
        self.wake.set()
        self.peek_wake.set()

    def peek_newer(self) -> bool:
        """While a pass writes: read the freeze files of the remote's head when it is newer
        than what the pass (or the last look) saw; the pass stops writing what they cover.
        Returns whether a newer head was read. A failed look is logged; the pass goes on."""
        with self._peek_lock:
            writing, seen = self._writing, self._peeked
        if writing is None or not isinstance(self.source, GitSource):
            return False
        try:  # the network is asked with no lock held: the pass never waits for it
            found = [read_freezes(sha, tree)
                     for sha, tree in self.source.peek(seen, self.settings.path)]
        except GitgateError as exc:
            log.warning("cannot look for a newer commit while writing: %s", exc.message,
                        extra={"event": "peek-failed"})
            return False
        if not found:
            return False
        with self._peek_lock:
            if self._writing != writing:
                return False  # that pass ended; the next one reads the head itself
            newer = merged([*([self.newer] if self.newer is not None else []), *found])
            self._peeked, self.newer = newer.revision, newer
        log.info("a newer commit %s while writing %s: its freezes stop what they cover now",
                 newer.revision[:12], writing[:12],
                 extra={"event": "newer-head", "revision": newer.revision})
        return True

    def watch_newer(self) -> threading.Thread:
        """Look for a newer head while a pass writes: every `freeze_check`, and at once on a
        webhook."""
        every = self.settings.freeze_check.total_seconds()

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

    def publish(self) -> None:
        """Publish what this turn of `run` left (`Published`), in one assignment."""
        state, result = self.state, self.state.last_result
        self.published = Published(
            at=self.clock(), leading=state.leading, revision=state.revision,
            last_error=state.last_error, observation=state.observation,
            inventories=MappingProxyType(dict(state.inventories or {})),
            overview=MappingProxyType(dict(state.overview or {})), signature=state.signature,
            gate_report=state.gate_report,
            failed=frozenset(b.bundle for b in (result.bundles if result else ()) if b.failed))

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
            self._anchored = self._anchored and leading  # read again when it leads again
            log.info("became leader" if leading else "standing by",
                     extra={"event": "leader" if leading else "standby"})
            was_leader = leading
        if leading and self.shards is not None and not self._take_turn():
            self.wake.wait(self.shards.retry_period)
            self.wake.clear()
            return leading
        if leading:
            try:
                passed = self.tick() is not None
                if passed:
                    give_back()  # what the pass freed, before a read of Karmada
                self.after_tick(passed)
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
