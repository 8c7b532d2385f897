"""How far one object of a syncing bundle got, from its ResourceBinding: a hook is done once
it ran to completion on every cluster Karmada dispatched it to (a Job's `Complete` condition,
a Pod's `Succeeded` phase, as Karmada reflects the member's status into
`status.aggregatedStatus[].status`; any other kind once Healthy there); a template once it is
ready (scheduled, applied, Healthy, current) on every cluster not suspended. A cluster whose
dispatch is suspended is not waited for: it gets the hook with the templates when the
suspension lifts. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from gitgate.karmada.bindingstatus import BindingStatus, Health, MemberRecord
from gitgate.karmada.dispatch import BindingKey, binding_key, dispatch_of, propagated
from gitgate.karmada.syncsteps import Progress
from gitgate.model import Manifest, ObjectRef


def _true(conditions: object, kind: str) -> Manifest | None:
    """The condition of type `kind` (lower case: Kubernetes' words are not gitgate's reasons)
    when it is True."""
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and str(condition.get("type")).lower() == kind and \
                condition.get("status") == "True":
            return condition
    return None


def _ran(ref: ObjectRef, cluster: str, member: MemberRecord) -> Progress:
    """One hook on one cluster, applied there."""
    status = member.status
    where = f"{ref} on {cluster}"
    if ref.kind == "Job":
        failed = _true(status.get("conditions"), "failed")
        if failed is not None:
            why = ": ".join(str(failed[k]) for k in ("reason", "message") if failed.get(k))
            return Progress(failed=f"{where} failed" + (f" ({why})" if why else ""))
        if _true(status.get("conditions"), "complete") is not None:
            return Progress(done=True)
        return Progress(waiting=f"{where} has not completed")
    if ref.kind == "Pod":
        phase = status.get("phase")
        if str(phase).lower() == "failed":
            return Progress(failed=f"{where} failed ({status.get('message') or 'phase Failed'})")
        if phase == "Succeeded":
            return Progress(done=True)
        return Progress(waiting=f"{where} has not succeeded (phase {phase or 'unknown'})")
    if member.health is Health.HEALTHY:
        return Progress(done=True)
    return Progress(waiting=f"{where} is {member.health}")


def hook_progress(ref: ObjectRef, binding: BindingStatus | None) -> Progress:
    if binding is None:
        return Progress(waiting=f"{ref} has no ResourceBinding yet")
    if not binding.scheduled_on:
        return Progress(waiting=f"{ref} is not scheduled on any cluster yet")
    active = [c for c in binding.scheduled_on if not binding.suspended(c)]
    if not active:
        return Progress(waiting=f"{ref}: dispatch is suspended on every cluster")
    waiting = ""
    for cluster in active:
        member = binding.members.get(cluster)
        if member is not None and member.applied_message and not member.applied:
            return Progress(failed=f"{ref} on {cluster}: {member.applied_message}")
        seen = (_ran(ref, cluster, member) if member is not None and member.applied else
                Progress(waiting=f"{ref} on {cluster}: not applied yet"))
        if seen.failed:
            return seen
        waiting = waiting or seen.waiting
    return Progress(done=not waiting, waiting=waiting)


def template_progress(ref: ObjectRef, bindings: Mapping[BindingKey, BindingStatus],
                      templates: Mapping[ObjectRef, Manifest]) -> Progress:
    if not propagated(ref):
        return Progress(done=True)
    dispatch = dispatch_of([ref], bindings, templates)
    if not dispatch.clusters:
        return Progress(waiting=dispatch.message or f"{ref} is not scheduled on any cluster yet")
    waiting = dispatch.waiting_on()
    if waiting:
        return Progress(waiting=waiting[0].message or f"{ref} on {waiting[0].name}: "
                        f"{waiting[0].summary()}")
    return Progress(done=True)


def progress_of(refs: Mapping[ObjectRef, bool], bindings: Mapping[BindingKey, BindingStatus],
                templates: Mapping[ObjectRef, Manifest]) -> dict[ObjectRef, Progress]:
    """Per object (True: a hook), how far it got."""
    return {ref: hook_progress(ref, bindings.get(binding_key(ref))) if hook else
            template_progress(ref, bindings, templates) for ref, hook in refs.items()}
