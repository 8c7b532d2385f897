"""The pass's writes: each bundle's objects by stage, bundles grouped by `dependsOn`, a
group's objects sent concurrently, each answer recorded in its bundle's result; a resync
reads the live objects first and writes only what drifted."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from gitgate.apiserver.changeset import ChangeKind, in_place
from gitgate.apiserver.fanout import fan_out
from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import recreate, stages, suspension, takeover
from gitgate.apply.confirmation import confirm_suspensions
from gitgate.apply.inventory import entry_for
from gitgate.apply.owners import read_owner, refuse_owner
from gitgate.apply.work import ApplyOptions, BundleWork
from gitgate.errors import GitgateError, KubeError, Reason
from gitgate.karmada.policy import is_policy, suspension_for
from gitgate.model import Manifest, ObjectRef
from gitgate.model.ownership import (
    with_instance,
)


def staged_writes(unit: BundleWork, cluster: ClusterPort) -> dict[int, list[Manifest]]:
    """The unit's writes by stage. A suspended bundle writes its propagation policies first
    (see `suspension.plan_steps`), its templates after Karmada confirmed the suspension."""
    assert unit.diff is not None and unit.plan is not None
    verdict = unit.plan.verdict
    wanted = suspension_for(verdict)
    if wanted is None or not unit.diff.to_apply:  # nothing to write: nothing to read either
        staged = stages.by_stage(unit.diff.to_apply)
        if unit.previous is None:
            _own_policies_first(staged, unit)
        return staged
    unit.steps = suspension.plan_steps((*unit.plan.desired, *unit.plan.policies),
                                       unit.diff.to_apply, wanted, cluster)
    staged = stages.by_stage([o for o in unit.diff.to_apply if not is_policy(o)],
                             suspending=True)
    staged[stages.STAGE_SUSPENSION] = list(unit.steps.before)
    staged[stages.STAGE_POLICIES] += list(unit.steps.after)
    return staged


def _own_policies_first(staged: dict[int, list[Manifest]], unit: BundleWork) -> None:
    """A bundle's first write (no record yet): its own policies before its templates.
    Karmada's detector keeps every template no policy claims yet in one waiting list, and each
    new PropagationPolicy reads that whole list: with the policies last, a cold apply of n
    bundles made n policies read up to every bundle's templates (bench/results/history.md). Written
    first, a policy finds no template waiting, and each template is claimed as it arrives,
    with the bundle's own overrides already there. An override acting on another bundle
    stays last: it waits for that bundle's suspension to be confirmed. A bundle with a
    record keeps its policies last, so a changed placement or a lifted suspension never
    sends the templates it is about to replace."""
    assert unit.plan is not None
    foreign = {ref for ref, _ in unit.plan.bundle.acts_on}
    last = staged[stages.STAGE_POLICIES]
    staged[stages.STAGE_SUSPENSION] += [o for o in last if ObjectRef.of(o) not in foreign]
    staged[stages.STAGE_POLICIES] = [o for o in last if ObjectRef.of(o) in foreign]


def _levels(order: list[str], work: dict[str, BundleWork]) -> list[list[str]]:
    """Bundles grouped so that each group comes after every bundle it depends on: a stage
    writes a group's objects concurrently, and the next group once they are all answered."""
    level: dict[str, int] = {}
    for name in order:
        unit = work[name]
        needs = unit.plan.bundle.source.options.depends_on if unit.plan else ()
        level[name] = 1 + max((level[d] for d in needs if d in level), default=-1)
    groups: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for name in order:
        groups[level[name]].append(name)
    return groups


_INTERRUPTED = "interrupted"  # the stop flag was set before the object was sent
_FROZEN = "frozen: "  # a freeze learned mid-pass covers the bundle (the reason follows)


_SKIPPED = "skipped"  # an earlier object of the same bundle failed


def late_frozen(unit: BundleWork, why: str) -> None:
    """A freeze committed while the pass was writing covers the bundle: what was sent stays
    recorded, nothing more of it goes this pass."""
    if not unit.result.failed:
        unit.result.fail(Reason.FROZEN, f"a freeze committed while this pass was writing "
                         f"covers it ({why}): nothing more of it is written or pruned; the "
                         "next pass judges the new commit")


def apply_stages(work: dict[str, BundleWork], order: list[str], cluster: ClusterPort,
                  options: ApplyOptions, staged: dict[str, dict[int, list[Manifest]]],
                  stop: threading.Event | None = None,
                  giving: Mapping[str, takeover.Giver] | None = None) -> dict[str, str]:
    """Write every stage; returns the bundles whose suspension does not hold (see
    `confirm_suspensions`; `giving`: the records of the bundles whose objects this pass may
    hand to another, `apply.takeover`)."""
    groups = _levels(order, work)
    created = _created_here(staged) if options.dry_run else _Created()
    unsafe: dict[str, str] = {}
    for stage in stages.STAGES:
        crds: list[str] = []
        for group in groups:
            batch = [(work[name], obj)
                     for name in _writing(work, group, stage, staged, stop, options)
                     for obj in staged[name][stage]]
            answers = _send(batch, cluster, options, stop, created)
            for (unit, obj), answer in zip(batch, answers, strict=True):
                _record(unit, obj, answer, crds)
        if stage == stages.STAGE_SUSPENSION:
            unsafe = confirm_suspensions(work, staged, cluster, options, stop, giving or {})
        if crds and not options.dry_run:
            late = cluster.wait_established(crds)
            for unit in work.values():
                if late and not unit.result.failed and any(
                        r.name in late for r in unit.result.applied):
                    unit.result.fail(Reason.APPLY_FAILED,
                                     f"CRD(s) not established in time: {', '.join(late)}")
    return unsafe


@dataclass(frozen=True)
class _Created:
    """What a dry-run pass would create that others of its objects need: namespaces, and the
    kinds of its CRDs (group, kind)."""

    namespaces: frozenset[str] = frozenset()
    kinds: frozenset[tuple[str, str]] = frozenset()

    def makes_way(self, ref: ObjectRef, obj: Manifest, exc: KubeError) -> bool:
        """The server refused the object only because it does not have what this pass would
        create before it: its namespace, or its kind's CRD."""
        if exc.status != 404:
            return False
        if ref.namespace in self.namespaces and \
                f'namespaces "{ref.namespace}" not found' in exc.message:
            return True
        return (ref.group, ref.kind) in self.kinds and "does not serve" in exc.message


def _created_here(staged: dict[str, dict[int, list[Manifest]]]) -> _Created:
    objects = [o for stages_ in staged.values() for batch in stages_.values() for o in batch]
    namespaces = {str(o["metadata"]["name"]) for o in objects
                  if o.get("apiVersion") == "v1" and o.get("kind") == "Namespace"}
    kinds = {(str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", "")))
             for o in objects if o.get("kind") == "CustomResourceDefinition"
             for spec in [o.get("spec") or {}]}
    return _Created(frozenset(namespaces), frozenset(kinds))


def report_unchecked(work: dict[str, BundleWork]) -> None:
    """A dry run says which objects the server could not check."""
    for unit in work.values():
        if unit.unchecked and not unit.result.failed:
            note = (f"dry run: {len(unit.unchecked)} object(s) not checked by the server, as "
                    f"their namespace or CRD is created by this pass first (e.g. "
                    f"{unit.unchecked[0]})")
            unit.result.message = "; ".join(m for m in (unit.result.message, note) if m)


def report_blocked(work: dict[str, BundleWork]) -> None:
    """A bundle whose overrides were left out fails (its other writes went through)."""
    for unit in work.values():
        if unit.blocked and not unit.result.failed:
            unit.result.fail(Reason.SUSPENSION_NOT_OBSERVED, "; ".join(unit.blocked))


def _send(batch: list[tuple[BundleWork, Manifest]], cluster: ClusterPort, options: ApplyOptions,
          stop: threading.Event | None, created: _Created) -> list[ChangeKind | str | GitgateError]:
    """Apply every object of the batch, `options.concurrency` at a time. After a bundle's
    first failure its objects not yet sent are skipped, as a serial pass would stop there."""
    failing: set[str] = set()

    def send(job: tuple[BundleWork, Manifest]) -> ChangeKind | str:
        unit, obj = job
        if stop is not None and stop.is_set():
            return _INTERRUPTED
        if unit.result.bundle in failing:
            return _SKIPPED
        why = options.frozen_late(unit.result.bundle)
        if why is not None:
            failing.add(unit.result.bundle)
            return _FROZEN + why
        try:
            return _apply_one(unit, obj, cluster, options, created)
        except GitgateError:
            failing.add(unit.result.bundle)
            raise

    return fan_out(send, batch, options.concurrency)


def _writing(work: dict[str, BundleWork], group: list[str], stage: int,
             staged: dict[str, dict[int, list[Manifest]]],
             stop: threading.Event | None, options: ApplyOptions) -> list[str]:
    """The bundles of `group` that write in this stage: not failed, not stopped, not frozen
    since the pass began, and none of their dependencies failed."""
    out = []
    for name in group:
        unit = work[name]
        if unit.diff is None or unit.result.failed or unit.plan is None:
            continue
        if staged[name][stage] and (why := options.frozen_late(name)) is not None:
            late_frozen(unit, why)
            continue
        if stop is not None and stop.is_set():
            if staged[name][stage]:
                unit.result.fail(Reason.INTERRUPTED,
                                 "stopping: the rest is applied by the next pass")
            continue
        needs = unit.plan.bundle.source.options.depends_on
        blocking = [d for d in needs if d in work and work[d].result.failed]
        if blocking:
            unit.result.fail(Reason.DEPENDENCY_NOT_READY,
                             f"depends on failed bundle(s) {', '.join(blocking)}")
            continue
        out.append(name)
    return out


def _record(unit: BundleWork, obj: Manifest, answer: ChangeKind | str | GitgateError,
            crds: list[str]) -> None:
    """One object's answer into its bundle's result (in the order the objects were given)."""
    if isinstance(answer, GitgateError):
        if not unit.result.failed:  # the first failure names its object
            unit.result.fail(answer.reason, answer.message)
        return
    if answer == _INTERRUPTED:
        if not unit.result.failed:
            unit.result.fail(Reason.INTERRUPTED, "stopping: the rest is applied by the next pass")
        return
    if answer == _SKIPPED:
        return
    if isinstance(answer, str) and answer.startswith(_FROZEN):
        late_frozen(unit, answer.removeprefix(_FROZEN))
        return
    assert isinstance(answer, ChangeKind)
    written = unit.hashed(obj)
    ref = written.ref
    unit.result.changes.add(ref, answer)
    if answer is ChangeKind.UNCHANGED:
        return
    unit.entries[ref] = entry_for(written)
    unit.wrote = True
    if ref.kind == "CustomResourceDefinition":
        crds.append(ref.name)


def read_live(work: dict[str, BundleWork], cluster: ClusterPort, options: ApplyOptions) -> None:
    """A resync compares what Git sets with the live objects, read with one list per
    apiVersion, kind and namespace (not one GET per object), each by whoever writes those
    objects (a tenant's, as the tenant: `for_ref` of a cluster sending requests as tenants);
    a list that fails leaves its objects to be read one by one."""
    wanted: dict[tuple[str, str, str, int], list[tuple[BundleWork, ObjectRef]]] = {}
    readers: dict[int, ClusterPort] = {}
    for_ref = getattr(cluster, "for_ref", None)
    for unit in work.values():
        if unit.diff is None or not unit.resync_only:
            continue
        for obj in unit.diff.to_apply:
            ref = ObjectRef.of(obj)
            if ref in unit.resync_only:
                reader: ClusterPort = for_ref(ref) if callable(for_ref) else cluster
                readers[id(reader)] = reader
                wanted.setdefault((obj["apiVersion"], ref.kind, ref.namespace, id(reader)),
                                  []).append((unit, ref))
    keys = sorted(wanted)
    answers = fan_out(lambda key: readers[key[3]].list_objects(*key[:3]), keys,
                      options.concurrency)
    for key, answer in zip(keys, answers, strict=True):
        if isinstance(answer, GitgateError):
            continue
        by_name = {o["metadata"]["name"]: o for o in answer}
        for unit, ref in wanted[key]:
            unit.live[ref] = by_name.get(ref.name)


def _apply_one(unit: BundleWork, obj: Manifest, cluster: ClusterPort,
               options: ApplyOptions, created: _Created) -> ChangeKind:
    """Server-side apply, labelled with the instance, and what the server made of it. A
    resync reads the object first and writes only when a field Git sets has drifted. An
    object another instance labels as its own, or that is live in another bundle a freeze
    holds, is not taken over (`apply.owners`). An immutable
    field is recreated where the object allows it."""
    ref = ObjectRef.of(obj)
    obj = with_instance(obj, options.instance)
    if ref in unit.resync_only:
        live = unit.live[ref] if ref in unit.live else read_owner(
            unit, ref, obj["apiVersion"], cluster)
        refuse_owner(unit, ref, live, options)
        if live is not None and in_place(obj, live):
            return ChangeKind.UNCHANGED
    elif ref in unit.owner_unread:
        refuse_owner(unit, ref, read_owner(unit, ref, obj["apiVersion"], cluster), options)
    try:
        answer = cluster.apply(obj, dry_run=options.dry_run, force=options.force_conflicts)
    except KubeError as exc:
        if options.dry_run and created.makes_way(ref, obj, exc):
            unit.unchecked.append(ref)  # a real pass creates its namespace or CRD first
            return ChangeKind.CREATED
        if not exc.immutable_fields:
            raise
        if unit.steps is not None or not recreate.allows_recreate(obj):
            raise recreate.refusal(obj, exc.immutable_fields, unit.steps is not None) from None
        if not options.dry_run:
            recreate.recreate(cluster, obj, force=options.force_conflicts)
        return ChangeKind.RECREATED
    if not options.dry_run and recreate.terminating(answer):
        answer = recreate.after_deletion(cluster, obj, force=options.force_conflicts)
    return ChangeKind.CREATED if answer.created else ChangeKind.CONFIGURED
