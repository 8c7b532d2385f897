"""Bundles with a `rollout`: turn each step of the rollout into the bundle's verdict for this
pass. Clusters not yet released become a per-cluster suspension, which the engine writes like
a pause (the policy's suspension first, confirmed, then the templates; lifted after them). A
halted rollout is the verdict `halted`. Pure: (plan, inventories, what Karmada reports, now) ->
the plan this pass applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from gitgate.errors import ConfigError
from gitgate.karmada.dispatch import Dispatch, propagated
from gitgate.karmada.waves import RolloutState, Step, step
from gitgate.model import Action, BundleVerdict, HoldReason, ReasonKind, Verdict, join
from gitgate.model.rolloutspec import Members
from gitgate.plan import BundlePlan, Plan, with_verdict
from gitgate.progression.analysis import Measure, analyser
from gitgate.progression.record import Recorded
from gitgate.timespec import parse_time

R = TypeVar("R", bound=Recorded)
ROLLING = (Verdict.APPLY, Verdict.SUSPENDED)
GATED = (Verdict.SUSPENDED, Verdict.HELD)  # a gate stops the rollout where it is


def with_rollouts(plan: Plan, inventories: Mapping[str, Recorded],
                  seen: Mapping[str, Dispatch], now: datetime,
                  members: Members | None = None, unreadable: str = "",
                  measure: Measure | None = None) -> Plan:
    """`unreadable`: why Karmada's bindings could not be read; a rollout then neither
    releases nor halts a wave on what it cannot see, and its bundle writes nothing.
    `measure`: how a rollout's analysis queries its Prometheus (None: nothing is queried,
    and a wave with an analysis waits for it, never released on Karmada's health alone)."""
    known = members or Members()
    bundles = tuple(
        _held_unread(item, unreadable) if unreadable and item.bundle.source.options.rollout
        and item.verdict.verdict is not Verdict.FAILED else
        _rolled(item, inventories.get(item.bundle.name), seen.get(item.bundle.name), now,
                known, plan.revision, measure) for item in plan.bundles)
    return replace(plan, bundles=bundles)


def _held_unread(item: BundlePlan, error: str) -> BundlePlan:
    return hold_for(item, ReasonKind.UNREADABLE, "rollout",
                    f"cannot read what Karmada did with the bundle ({error}); its rollout waits "
                    "and nothing is written until it can be read")


def _rolled(item: BundlePlan, previous: Recorded | None, dispatch: Dispatch | None,
            now: datetime, members: Members, revision: str = "",
            measure: Measure | None = None) -> BundlePlan:
    spec = item.bundle.source.options.rollout
    verdict = item.verdict
    if spec is None or verdict.verdict is Verdict.FAILED:
        return item
    if spec.selects and members.error:
        return _unresolved(item, members.error)
    state = RolloutState.from_json(previous.progression.rollout) if previous else None
    clusters = {c.name: c for c in dispatch.clusters} if dispatch else {}
    done = step(spec.resolved(members.labels), state, previous.applied_digest if previous else "",
                verdict.digest, clusters, now, gated=verdict.verdict in GATED,
                known=tuple(members.labels), retry=_retry(previous),
                analyse=analyser(spec.analysis, item.bundle.name, revision,
                                 measure) if spec.analysis else None,
                nothing_to_judge=_nothing_to_judge(item, dispatch))
    if verdict.verdict not in ROLLING:  # held: nothing is written; the state still moves
        return replace(item, rollout=done)
    return with_verdict(replace(item, rollout=done),
                        _rolling_verdict(verdict, done, rollout_where(item)))


def _nothing_to_judge(item: BundlePlan, dispatch: Dispatch | None) -> bool:
    """Nothing the bundle has in Git is dispatched by Karmada, and nothing it has live is
    judged with it (`passes.clusterview.in_git`): a wave releases nothing."""
    return dispatch is not None and dispatch.propagated == 0 and not any(
        propagated(ref) for ref in item.bundle.object_refs)


def rollout_where(item: BundlePlan) -> tuple[str, int]:
    """The file and line of the bundle's `rollout:` as the repo has it (its bundle.yaml, or
    gitgate.yaml's defaults); the bundle's own bundle.yaml when that is not known."""
    file, line = item.bundle.source.options.rollout_at
    return (file, line) if file else (join(item.bundle.source.path, "bundle.yaml"), 0)


def _retry(previous: Recorded | None) -> datetime | None:
    if previous is None or not previous.progression.retry:
        return None
    try:
        return parse_time(previous.progression.retry, "retryRollout")
    except ConfigError:
        return None  # not a time gitgate wrote: no retry


def _unresolved(item: BundlePlan, error: str) -> BundlePlan:
    """A wave chooses clusters by label and Karmada's Clusters could not be read: which
    clusters may get the new version is unknown, so nothing is written (fail closed)."""
    return hold_for(item, ReasonKind.ROLLOUT, "rollout",
                    f"cannot tell which member clusters the rollout's label selectors choose "
                    f"({error}); nothing is written until Karmada's Clusters can be read")


def hold_for(item: BundlePlan, kind: ReasonKind, gate: str, why: str) -> BundlePlan:
    """The bundle held for this pass (nothing written), saying why."""
    verdict = item.verdict
    file, line = rollout_where(item)
    note = HoldReason(kind, gate, file, why, Action.HOLD, line=line or None)
    return replace(item, verdict=replace(verdict, verdict=Verdict.HELD,
                                         reasons=(*verdict.reasons, note)))


def _rolling_verdict(verdict: BundleVerdict, done: Step, where: tuple[str, int]
                     ) -> BundleVerdict:
    """The bundle's verdict with the rollout's step: the clusters it keeps suspended (on top
    of a gate's) or its halt. That is all a rollout decides; the plan's objects follow the
    verdict's suspension (`plan.with_verdict`)."""
    if not done.suspend and not done.halted:
        return _with_note(verdict, done, verdict.verdict, verdict.suspend_clusters, where)
    if verdict.verdict is Verdict.SUSPENDED and verdict.suspend_clusters is None:
        clusters = None  # a gate suspends every cluster: that is wider still
    else:
        clusters = tuple(sorted({*(verdict.suspend_clusters or ()), *done.suspend}))
    kind = Verdict.HALTED if done.halted else Verdict.SUSPENDED
    return _with_note(verdict, done, kind, clusters, where)


def _with_note(verdict: BundleVerdict, done: Step, kind: Verdict,
               clusters: tuple[str, ...] | None, where: tuple[str, int]) -> BundleVerdict:
    note = HoldReason(ReasonKind.ROLLOUT, "rollout", where[0], done.waiting_for,
                      Action.SUSPEND, clusters=done.suspend, line=where[1] or None)
    changes = [c for c in (verdict.next_change, done.next_check) if c is not None]
    # the first reason says why the bundle stands as it does: the rollout's, when the
    # rollout holds clusters back or halted (before an approval's note, say)
    reasons = ((note, *verdict.reasons) if kind is not verdict.verdict
               or kind is Verdict.HALTED else (*verdict.reasons, note))
    return replace(verdict, verdict=kind, reasons=reasons,
                   next_change=min(changes) if changes else None, suspend_clusters=clusters)


def halted_rollouts(inventories: Mapping[str, R], names: list[str]
                    ) -> list[tuple[R, RolloutState]]:
    """The named bundles whose rollout is halted (what `gitgate resume` retries)."""
    out = []
    for name in names:
        inventory = inventories.get(name)
        state = RolloutState.from_json(inventory.progression.rollout) if inventory else None
        if inventory is not None and state is not None and state.halted:
            out.append((inventory, state))
    return out


def retries_requested(inventories: Mapping[str, Recorded]) -> list[str]:
    """The bundles whose halted rollout `gitgate resume` asked to retry, not yet retried."""
    out = []
    for name, inventory in sorted(inventories.items()):
        state = RolloutState.from_json(inventory.progression.rollout)
        if state is not None and state.retry_due(_retry(inventory)):
            out.append(name)
    return out
