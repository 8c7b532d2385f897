"""A propagation policy the repo ships takes over what it selects, so `bundle.policies` fails
one that selects another bundle's objects in Git. An object another bundle has live but no
bundle has in Git any more (a rolling bundle's leftover, whose delete waits for its last
wave; what a bundle that left Git and is held still has live) is that bundle's too: a policy
of another bundle that selects it, or may (its record does not say its labels), would take
it from the policy that lets go of it and dispatch it past that bundle's rollout and
freezes. That policy's bundle fails (`PolicyTakeover`), naming the object and its bundle.

Pure: (plan, the records) -> the plan this pass applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from gitgate.bundle.reach import live_labels, reaches
from gitgate.bundle.selectors import is_propagation
from gitgate.errors import Reason
from gitgate.model import BundleVerdict, HoldReason, ObjectRef, ReasonKind, Verdict
from gitgate.plan import BundlePlan, Plan
from gitgate.progression.frozenreach import UNKNOWN_LABELS, LiveRecord


@dataclass(frozen=True)
class _Live:
    ref: ObjectRef
    api_version: str | None
    labels: Mapping[str, str] | None
    holder: str


def with_live_takeovers(plan: Plan, records: Mapping[str, LiveRecord]) -> Plan:
    """`plan` with each bundle failed whose propagation policy reaches an object live in
    another bundle's record that no bundle has in Git."""
    shipping = {item.bundle.name for item in plan.bundles
                if item.verdict.verdict is not Verdict.FAILED
                and any(is_propagation(o) for o in item.bundle.objects)}
    if not shipping:
        return plan
    in_git = {ref for item in plan.bundles for ref in item.bundle.object_refs}
    live = [_Live(ref, api if isinstance(api := getattr(entry, "api_version", None), str)
                  else None,
                  live_labels(getattr(entry, "labels", None), record.bundle,
                              str(getattr(record, "instance", ""))), name)
            for name, record in records.items() for ref, entry in record.by_ref().items()
            if ref not in in_git]
    if not live:
        return plan
    return replace(plan, bundles=tuple(_judged(item, live) if item.bundle.name in shipping
                                       else item for item in plan.bundles))


def _judged(item: BundlePlan, live: list[_Live]) -> BundlePlan:
    for policy in (o for o in item.bundle.objects if is_propagation(o)):
        found = next((f for f in live if f.holder != item.bundle.name
                      and reaches(policy, f.ref, f.api_version, f.labels)), None)
        if found is None:
            continue
        note = f"; {UNKNOWN_LABELS}" if found.labels is None else ""
        why = HoldReason(ReasonKind.RENDER, Reason.POLICY_TAKEOVER, item.bundle.source.path,
                         f"{ObjectRef.of(policy)} selects {found.ref}, live in bundle "
                         f"{found.holder} and in no bundle's Git{note}: a propagation policy "
                         "in the repo may select only its own bundle's objects, else it would "
                         f"take it over from {found.holder} (past its rollout and freezes); "
                         "narrow its resourceSelectors")
        verdict = BundleVerdict(item.bundle.name, Verdict.FAILED, item.verdict.digest,
                                (why, *item.verdict.reasons), item.verdict.next_change)
        return BundlePlan(item.bundle, verdict, (), (), item.rollout, item.hooks, item.kept,
                          item.instance)
    return item
