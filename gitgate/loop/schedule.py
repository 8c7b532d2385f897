"""When the loop runs a pass and how long it sleeps: its settings, its state between turns,
why a pass is due, the back-off after a failure and the next wake-up (pure: the clock is the
caller's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.apply.work import ApplyOptions, PassResult
from gitgate.errors import GitgateError, Reason
from gitgate.passes.karmadareads import Observation
from gitgate.passes.shards import Turn
from gitgate.plan import Plan
from gitgate.source.gateguard import GateReport
from gitgate.source.signatures import Signature

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


