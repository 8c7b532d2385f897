"""Bundles with a `rollout`: turn each step of the rollout into the bundle's verdict for this
pass. Clusters not yet released become a per-cluster suspension, which the engine writes like
a pause (the policy's suspension first, confirmed, then the templates; lifted after them). A
halted rollout is the verdict `halted`. Pure: (plan, inventories, what Karmada reports, now) ->
the plan this pass applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from gitgate.apply.inventory import Inventory
from gitgate.karmada.dispatch import Dispatch
from gitgate.karmada.policy import generated_policies, with_suspension
from gitgate.karmada.rollout import RolloutState, Step, step
from gitgate.model import Action, BundleVerdict, HoldReason, ReasonKind, Verdict, join
from gitgate.plan import BundlePlan, Plan

ROLLING = (Verdict.APPLY, Verdict.SUSPENDED)
GATED = (Verdict.SUSPENDED, Verdict.HELD)  # a gate stops the rollout where it is


def with_rollouts(plan: Plan, inventories: Mapping[str, Inventory],
                  seen: Mapping[str, Dispatch], now: datetime) -> Plan:
    bundles = tuple(_rolled(item, inventories.get(item.bundle.name),
                            seen.get(item.bundle.name), now) for item in plan.bundles)
    return replace(plan, bundles=bundles)


def _rolled(item: BundlePlan, previous: Inventory | None, dispatch: Dispatch | None,
            now: datetime) -> BundlePlan:
    spec = item.bundle.source.options.rollout
    verdict = item.verdict
    if spec is None or verdict.verdict is Verdict.FAILED:
        return item
    state = RolloutState.from_json(previous.rollout) if previous else None
    clusters = {c.name: c for c in dispatch.clusters} if dispatch else {}
    done = step(spec, state, previous.digest if previous else "", verdict.digest, clusters,
                now, gated=verdict.verdict in GATED)
    if verdict.verdict not in ROLLING:  # held: nothing is written; the state still moves
        return replace(item, rollout=done)
    return replace(item, rollout=done, **_verdict_parts(item, done))


def _verdict_parts(item: BundlePlan, done: Step) -> dict:
    verdict = item.verdict
    if not done.suspend and not done.halted:
        return {"verdict": _with_note(verdict, done, verdict.verdict, verdict.suspend_clusters)}
    if verdict.verdict is Verdict.SUSPENDED and verdict.suspend_clusters is None:
        clusters = None  # a gate suspends every cluster: that is wider still
    else:
        clusters = tuple(sorted({*(verdict.suspend_clusters or ()), *done.suspend}))
    kind = Verdict.HALTED if done.halted else Verdict.SUSPENDED
    new = _with_note(verdict, done, kind, clusters)
    bundle = item.bundle
    return {"verdict": new,
            "policies": tuple(generated_policies(bundle, bundle.source.options.placement, new)),
            "desired": tuple(with_suspension(bundle.objects, new))}


def _with_note(verdict: BundleVerdict, done: Step, kind: Verdict,
               clusters: tuple[str, ...] | None) -> BundleVerdict:
    note = HoldReason(ReasonKind.ROLLOUT, "rollout", join(verdict.bundle, "bundle.yaml"),
                      done.waiting_for, Action.SUSPEND, clusters=done.suspend)
    changes = [c for c in (verdict.next_change, done.next_check) if c is not None]
    return replace(verdict, verdict=kind, reasons=(*verdict.reasons, note),
                   next_change=min(changes) if changes else None, suspend_clusters=clusters)
