"""A suspension names member clusters Karmada has. A gate that suspends a bundle on clusters
Karmada has no member of (a typo, `membr2`) would stop nothing there while every output says
the bundle is suspended; so it suspends the bundle on every cluster instead, and its reason
names what is no member. The same when the member clusters cannot be read. A Karmada with no
member cluster at all dispatches nowhere: its suspensions stay as written. Pure: (plan,
Karmada's members) -> the plan this pass applies."""

from __future__ import annotations

from dataclasses import replace

from gitgate.model import Action, HoldReason, Verdict
from gitgate.model.rolloutspec import Members
from gitgate.plan import BundlePlan, Plan, bundle_plan


def names_clusters(plan: Plan) -> bool:
    """Whether a bundle of `plan` is suspended on named clusters (the members are needed)."""
    return any(item.verdict.verdict is Verdict.SUSPENDED and item.verdict.suspend_clusters
               for item in plan.bundles)


def with_member_suspensions(plan: Plan, members: Members) -> Plan:
    """The plan with every suspension that names a cluster Karmada does not have (or when
    the members could not be read) widened to every cluster."""
    if not names_clusters(plan):
        return plan
    return replace(plan, bundles=tuple(_widened(item, members) for item in plan.bundles))


def _widened(item: BundlePlan, members: Members) -> BundlePlan:
    verdict = item.verdict
    if verdict.verdict is not Verdict.SUSPENDED or not verdict.suspend_clusters:
        return item
    reasons = tuple(_checked(r, members) for r in verdict.reasons)
    if reasons == verdict.reasons:
        return item
    suspending = [r for r in reasons if r.action is Action.SUSPEND]
    clusters = (tuple(sorted({c for r in suspending for c in r.clusters}))
                if suspending and all(r.clusters for r in suspending) else None)
    outcome = replace(verdict, reasons=reasons, suspend_clusters=clusters)
    return replace(bundle_plan(item.bundle, outcome, item.instance), rollout=item.rollout,
                   hooks=item.hooks, kept=item.kept)


def _checked(reason: HoldReason, members: Members) -> HoldReason:
    """A suspension's reason as it stands, or widened to every cluster, saying why."""
    if reason.action is not Action.SUSPEND or not reason.clusters:
        return reason
    if members.error:
        why = (f"the member clusters cannot be read ({members.error}), so whether "
               f"{', '.join(reason.clusters)} are member clusters is unknown")
    else:
        unknown = [c for c in reason.clusters if c not in members.labels]
        if not unknown or not members.labels:
            return reason
        known = ", ".join(sorted(members.labels)) or "none"
        why = (f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a member "
               f"cluster of Karmada (members: {known})")
    return replace(reason, clusters=(), reason=f"{reason.reason}; {why}: suspended on every "
                   f"cluster until {reason.where()} names member clusters only")
