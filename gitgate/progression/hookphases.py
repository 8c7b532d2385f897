"""Bundles with hooks: turn each step of their sync into what this pass writes. The plan's
desired objects shrink to the step's (earlier steps' templates, this step's new hooks),
and what the inventory holds that must stay as it is (templates of later steps at their old
version, hooks already written) is kept: neither sent nor pruned. Pure: (plan, inventories,
progress per object, now, hook timeout) -> the plan this pass applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from gitgate.karmada.syncsteps import HookState, Progress, SyncPlan, hook_step, sync_plan
from gitgate.model import Manifest, ObjectRef, Verdict
from gitgate.model.hookmarks import may_be_hook
from gitgate.plan import BundlePlan, Plan
from gitgate.progression.record import Recorded


def syncing(plan: Plan) -> dict[str, SyncPlan]:
    """The bundles that have hooks (the others are applied as they always are)."""
    out = {}
    for item in plan.bundles:
        if item.verdict.verdict in (Verdict.FAILED, Verdict.HELD):
            continue
        if not any(may_be_hook(o) for o in item.bundle.objects):
            continue
        steps = sync_plan(item.bundle.objects)
        if steps.has_hooks:
            out[item.bundle.name] = steps
    return out


def watched(plan: Plan, steps: Mapping[str, SyncPlan]) -> list[tuple[Manifest, bool]]:
    """The objects whose progress the syncing bundles wait on (True: a hook)."""
    out = []
    for item in plan.bundles:
        sync = steps.get(item.bundle.name)
        if sync is None:
            continue
        waited = {r for s in sync.steps for r in (*s.hooks, *s.templates)}
        out += [(o, ObjectRef.of(o) in sync.hooks) for o in item.bundle.objects
                if ObjectRef.of(o) in waited]
    return out


def with_hooks(plan: Plan, steps: Mapping[str, SyncPlan], inventories: Mapping[str, Recorded],
               progress: Mapping[ObjectRef, Progress], now: datetime,
               timeout: timedelta) -> Plan:
    bundles = tuple(_synced(item, steps[item.bundle.name], inventories.get(item.bundle.name),
                            progress, now, timeout) if item.bundle.name in steps else item
                    for item in plan.bundles)
    return replace(plan, bundles=bundles)


def _synced(item: BundlePlan, sync: SyncPlan, previous: Recorded | None,
            progress: Mapping[ObjectRef, Progress], now: datetime,
            timeout: timedelta) -> BundlePlan:
    verdict = item.verdict
    state = HookState.from_json(previous.progression.hooks) if previous else None
    present = frozenset(previous.by_ref()) if previous else frozenset()
    gated = verdict.verdict is Verdict.SUSPENDED and verdict.suspend_clusters is None
    applied = previous.applied_digest if previous else ""
    step = hook_step(sync, state, applied, verdict.digest, present, progress, now, timeout,
                     gated=gated)
    desired = tuple(o for o in item.desired if ObjectRef.of(o) in step.write)
    changes = [c for c in (verdict.next_change, step.next_check) if c is not None]
    policies = {ObjectRef.of(p) for p in item.policies}  # written at every step
    return replace(item, desired=desired, kept=tuple(sorted(step.keep - policies)), hooks=step,
                   verdict=replace(verdict, next_change=min(changes) if changes else None))
