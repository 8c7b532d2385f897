"""One apply pass over a small cluster port: staged server-side apply, skip-unchanged through
the inventories, prune with a mass-delete guard, holds kept strictly (no write to a held
bundle's objects), inventories written only when something changed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

from gitgate.apply import overrides, prunes, recreate, stages, suspension
from gitgate.apply.changeset import WRITES, Action, Applied, ChangeSet, in_place
from gitgate.apply.fanout import fan_out
from gitgate.apply.inventory import (
    DEFAULT_INSTANCE,
    INSTANCE_LABEL,
    INVENTORY_LABEL,
    NAMESPACE,
    Diff,
    Entry,
    Inventory,
    configmap_name,
    diff,
    entry_for,
    from_configmap,
    system_namespace,
    to_configmap,
)
from gitgate.bundle.selectors import OVERRIDE_KINDS
from gitgate.errors import GitgateError, KubeError, Reason
from gitgate.karmada.policy import is_policy, suspension_for
from gitgate.model import FIELD_MANAGER, Hashed, Manifest, ObjectRef, Verdict
from gitgate.plan import BundlePlan, Plan
from gitgate.timespec import rfc3339


class ClusterPort(Protocol):
    def apply(self, obj: Manifest, *, dry_run: bool = False, force: bool = False,
              manager: str = FIELD_MANAGER) -> Applied: ...
    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Manifest | None: ...
    def list_objects(self, api_version: str, kind: str, namespace: str = "",
             label_selector: str = "") -> list[Manifest]: ...
    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool: ...
    def wait_established(self, crd_names: list[str], timeout: float = 60.0) -> list[str]: ...
    def scope_of(self, api_version: str, kind: str) -> bool | None: ...


@dataclass(frozen=True)
class ApplyOptions:
    now: datetime
    dry_run: bool = False
    force_conflicts: bool = False
    allow_mass_prune: bool = False
    resync: timedelta = timedelta(minutes=10)
    instance: str = DEFAULT_INSTANCE  # several gitgates on one API server keep apart
    suspension_timeout: timedelta = timedelta(seconds=30)  # wait for Karmada's bindings
    concurrency: int = 8  # API requests in flight at once within a stage (1: one by one)
    hook_timeout: timedelta = timedelta(minutes=10)  # how long a sync step may take


@dataclass
class BundleResult:
    bundle: str
    verdict: str
    reason: str = ""
    message: str = ""
    changes: ChangeSet = field(default_factory=ChangeSet)  # from the server's answers
    kept: list[ObjectRef] = field(default_factory=list)  # prune disabled by annotation
    # left Git, but the live object is not marked as this bundle's (or is gitgate's own):
    # never deleted, no longer tracked
    not_owned: list[ObjectRef] = field(default_factory=list)
    prune_failed: list[ObjectRef] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # deletes that wait for another bundle
    failed: bool = False

    @property
    def applied(self) -> list[ObjectRef]:
        """Objects this pass wrote (created, configured or recreated)."""
        return self.changes.refs(*WRITES)

    @property
    def pruned(self) -> list[ObjectRef]:
        return self.changes.refs(Action.DELETED)

    @property
    def recreated(self) -> list[ObjectRef]:
        return self.changes.refs(Action.RECREATED)

    @property
    def unchanged(self) -> int:
        return self.changes.count(Action.UNCHANGED)


@dataclass
class PassResult:
    revision: str
    bundles: list[BundleResult]
    prune_blocked: bool = False
    inventories_written: int = 0

    @property
    def ok(self) -> bool:
        return not self.prune_blocked and not any(b.failed for b in self.bundles)


def read_inventories(cluster: ClusterPort,
                     instance: str = DEFAULT_INSTANCE) -> dict[str, Inventory]:
    configmaps = cluster.list_objects("v1", "ConfigMap", NAMESPACE,
                              f"{INVENTORY_LABEL}=true,{INSTANCE_LABEL}={instance}")
    inventories = [from_configmap(c) for c in configmaps]
    return {inv.bundle: inv for inv in inventories}


def _resync_due(previous: Inventory | None, options: ApplyOptions) -> bool:
    if previous is None or not previous.last_full_apply:
        return True
    try:
        last = datetime.fromisoformat(previous.last_full_apply.replace("Z", "+00:00"))
    except ValueError:
        return True
    return options.now - last >= options.resync


@dataclass
class _Work:
    plan: BundlePlan | None  # None for a bundle that left Git (only its inventory remains)
    previous: Inventory | None
    diff: Diff | None
    result: BundleResult
    entries: dict[ObjectRef, Entry]
    resync: bool = False
    wrote: bool = False
    steps: suspension.SuspensionSteps | None = None  # a suspended bundle's policy-first writes
    resync_only: frozenset[ObjectRef] = frozenset()  # sent only because a resync is due
    live: dict[ObjectRef, Manifest | None] = field(default_factory=dict)  # read for a resync
    blocked: list[str] = field(default_factory=list)  # overrides left out, and why

    def hashed(self, obj: Manifest) -> Hashed:
        return self.plan.hashed(obj) if self.plan is not None else Hashed.of(obj)


def run_pass(plan: Plan, cluster: ClusterPort, options: ApplyOptions,
             scope: Callable[[str], bool] | None = None,
             stop: threading.Event | None = None,
             inventories: dict[str, Inventory] | None = None) -> PassResult:
    """Apply `plan`. With `scope`, only bundles it accepts are touched: an inventory outside it
    is never taken for a bundle that left Git. With `stop` set, the pass ends after the object
    in flight, prunes nothing and records status. `inventories`: as read earlier in this pass
    (nothing in between writes them), else read here."""
    if inventories is None:
        inventories = read_inventories(cluster, options.instance)
    order, work = _prepare(plan, inventories, options)
    decision = prunes.decide(plan, inventories,
                             {n: w.diff.to_prune for n, w in work.items() if w.diff}, scope,
                             options.allow_mass_prune)
    mass = decision.blocked
    staged = {name: _staged(w, cluster) for name, w in work.items() if w.diff}
    if not options.dry_run:
        _record_intent(work, staged, cluster, options)
    _read_live(work, cluster, options)
    unsafe = _apply_stages(work, order, cluster, options, staged, stop)
    _report_blocked(work)
    interrupted = stop is not None and stop.is_set()
    guard = overrides.prune_guard((b.bundle for b in plan.bundles),
                                  {b.bundle.name: b.verdict.verdict for b in plan.bundles}, unsafe)
    if not options.dry_run:
        for unit in work.values():
            if unit.diff is None or unit.result.failed or not unit.diff.to_prune:
                continue
            if interrupted:
                unit.result.reason = Reason.INTERRUPTED
                unit.result.message = "stopping: pruning left for the next pass"
            elif mass:
                unit.result.reason = Reason.PRUNE_BLOCKED
                unit.result.message = decision.brake_message(len(unit.diff.to_prune))
            else:
                _prune(unit, unit.diff.to_prune, cluster, guard)
        if not (mass or interrupted):
            for name, gone in decision.gone.items():
                work[name] = (_held_gone_bundle(name, gone.inventory, list(gone.holds))
                              if gone.held else
                              _prune_gone_bundle(name, gone.inventory, cluster, options, guard))
    _report_hooks(work)
    written = 0 if options.dry_run else _write_inventories(work, plan, cluster, options,
                                                           _overrides_written(work))
    return PassResult(plan.revision, [w.result for w in work.values()], mass, written)


def _prepare(plan: Plan, inventories: dict[str, Inventory],
             options: ApplyOptions) -> tuple[list[str], dict[str, _Work]]:
    """Each bundle's starting point: failed, held, or open with its diff against the
    inventory; in `dependsOn` order."""
    order, order_problems = stages.bundle_order(
        {b.bundle.name: b.bundle.source.options.depends_on for b in plan.bundles})
    plans = {b.bundle.name: b for b in plan.bundles}
    failed = prunes.failed_inventories(plan, inventories)
    work: dict[str, _Work] = {}
    for name in order:
        item = plans[name]
        previous = inventories.get(name)
        verdict = item.verdict.verdict
        result = BundleResult(name, str(verdict))
        unit = _Work(item, previous, None, result, dict(previous.by_ref()) if previous else {})
        work[name] = unit
        if verdict is Verdict.FAILED:
            result.reason, result.failed = Reason.RENDER_FAILED, True
            result.message = "; ".join(r.reason for r in item.verdict.reasons)
        elif verdict is Verdict.HELD:
            result.reason = Reason.HELD
            result.message = "; ".join(f"{r.file}: {r.reason}" for r in item.verdict.reasons)
        elif name in order_problems:
            result.reason, result.failed = Reason.DEPENDENCY_NOT_READY, True
            result.message = order_problems[name]
        else:
            unit.resync = _resync_due(previous, options)
            kept = prunes.kept_back(item, failed)
            unit.diff = diff(item.written, previous, resync=unit.resync, keep=frozenset(kept))
            waiting = sorted((ref, names) for ref, names in kept.items() if names)
            if waiting:
                result.message = "; ".join(
                    f"{ref} is held with {', '.join(names)}: that bundle failed to render, "
                    "so what it would change there cannot be checked"
                    for ref, names in waiting)
            unit.resync_only = unit.diff.same_as_inventory
            for ref in unit.diff.unchanged:
                result.changes.add(ref, Action.UNCHANGED)
    return order, work


def _held_gone_bundle(name: str, inventory: Inventory, holds: list) -> _Work:
    """A bundle that left Git while a gate covers it: nothing is deleted until the gate lifts."""
    why = "; ".join(f"{r.file}: {r.reason}" for r in holds)
    result = BundleResult(name, str(Verdict.HELD), Reason.HELD,
                          f"left Git, but is held ({why}): nothing is pruned while held")
    return _Work(None, inventory, None, result, dict(inventory.by_ref()))


def _prune_gone_bundle(name: str, inventory: Inventory, cluster: ClusterPort,
                       options: ApplyOptions, guard: overrides.PruneGuard) -> _Work:
    """Delete every object of a bundle that left Git, then its inventory; what could not be
    deleted stays in the inventory."""
    orphan = _Work(None, inventory, None, BundleResult(name, str(Verdict.REMOVED)),
                   dict(inventory.by_ref()))
    _prune(orphan, inventory.entries, cluster, guard)
    if not orphan.entries:
        cluster.delete("v1", "ConfigMap", NAMESPACE, configmap_name(name, options.instance))
    else:
        orphan.result.failed, orphan.result.reason = True, Reason.PRUNE_FAILED
        _write_inventory(cluster, replace(inventory, entries=tuple(orphan.entries.values()),
                                          message=orphan.result.message))
    return orphan


def _staged(unit: _Work, cluster: ClusterPort) -> dict[int, list[Manifest]]:
    """The unit's writes by stage. A suspended bundle writes its propagation policies first
    (see `suspension.plan_steps`), its templates after Karmada confirmed the suspension."""
    assert unit.diff is not None and unit.plan is not None
    verdict = unit.plan.verdict
    wanted = suspension_for(verdict)
    if wanted is None or not unit.diff.to_apply:  # nothing to write: nothing to read either
        return stages.by_stage(unit.diff.to_apply)
    unit.steps = suspension.plan_steps((*unit.plan.desired, *unit.plan.policies),
                                       unit.diff.to_apply, wanted, cluster)
    staged = stages.by_stage([o for o in unit.diff.to_apply if not is_policy(o)],
                             suspending=True)
    staged[stages.STAGE_SUSPENSION] = list(unit.steps.before)
    staged[stages.STAGE_POLICIES] += list(unit.steps.after)
    return staged


def _needs_confirmation(staged: dict[int, list[Manifest]]) -> bool:
    """Templates (or override policies) are still to be written after the suspension."""
    return any(staged[s] for s in (stages.STAGE_SUSPENDED_CRDS, stages.STAGE_CLUSTER,
                                   stages.STAGE_NAMESPACED)) or any(
        not is_policy(o) for o in staged[stages.STAGE_POLICIES])


def _confirm_suspensions(work: dict[str, _Work], staged: dict[str, dict[int, list[Manifest]]],
                         cluster: ClusterPort, options: ApplyOptions,
                         stop: threading.Event | None) -> dict[str, str]:
    """Wait for Karmada to show each suspension written in this pass, where templates (or
    override policies from other bundles) are still to be written. Returns the bundles whose
    suspension does not hold, and why; overrides aimed at them are left out of the pass."""
    writes = overrides.override_writes(
        {n: u.plan.bundle for n, u in work.items() if u.plan is not None},
        {n: [o for objects in stages_.values() for o in objects]
         for n, stages_ in staged.items()})
    aimed = {target for write in writes for target in write.targets}
    wanted = {name: (unit.steps.first, unit.steps.templates) for name, unit in work.items()
              if unit.steps is not None and not unit.result.failed
              and (_needs_confirmation(staged[name]) or name in aimed)}
    if not options.dry_run and wanted:
        _await_suspensions(work, wanted, cluster, options, stop)
    unsafe = {name: f"its suspension was not confirmed: {work[name].result.reason}"
              for name in aimed if name in work and work[name].steps is not None
              and work[name].result.failed}
    if options.dry_run:
        return {}
    for writer, why in overrides.blocked(writes, unsafe).items():
        _leave_out(work[writer], staged[writer], {
            w.ref for w in writes if w.writer == writer and any(t in unsafe for t in w.targets)})
        work[writer].blocked += why
    return unsafe


def _leave_out(unit: _Work, staged: dict[int, list[Manifest]], refs: set[ObjectRef]) -> None:
    """Take `refs` out of the unit's writes; their inventory entries say "not written", so
    that the next pass sends them again."""
    for stage, objects in staged.items():
        staged[stage] = [o for o in objects if ObjectRef.of(o) not in refs]
    for ref in refs:
        known = unit.previous.by_ref().get(ref) if unit.previous else None
        if known is not None:
            unit.entries[ref] = known
        elif ref in unit.entries:
            unit.entries[ref] = replace(unit.entries[ref], hash="")


def _await_suspensions(work: dict[str, _Work],
                       wanted: dict[str, tuple[Manifest, tuple[Manifest, ...]]],
                       cluster: ClusterPort, options: ApplyOptions,
                       stop: threading.Event | None) -> None:
    timeout = options.suspension_timeout.total_seconds()
    confirmation = suspension.await_suspension(cluster, wanted, timeout, stop)
    for name, lags in confirmation.lagging.items():
        if not lags:
            continue
        result = work[name].result
        result.failed = True
        if confirmation.interrupted:
            result.reason = Reason.INTERRUPTED
            result.message = "stopping before Karmada confirmed the suspension"
        else:
            result.reason = Reason.SUSPENSION_NOT_OBSERVED
            result.message = suspension.describe(lags, timeout)


def _record_intent(work: dict[str, _Work], staged: dict[str, dict[int, list[Manifest]]],
                   cluster: ClusterPort, options: ApplyOptions) -> None:
    """Write-ahead: before a bundle's first write, its inventory lists every object the pass
    may create, so a fault at any later request (even the final inventory write) leaves no
    live object that no inventory records. A bundle whose intent cannot be recorded writes
    nothing."""
    intents: list[tuple[_Work, Inventory, dict[ObjectRef, Entry]]] = []
    for name, unit in work.items():
        if name not in staged or unit.result.failed:
            continue
        known = unit.previous.by_ref() if unit.previous else {}
        hashed = (unit.hashed(o) for objects in staged[name].values() for o in objects)
        # no hash yet: a write that fails leaves the entry different from Git, so the next
        # pass sends the object again instead of taking it for written
        new = {h.ref: replace(entry_for(h), hash="") for h in hashed if h.ref not in known}
        if not new:
            continue
        base = unit.previous or Inventory(
            bundle=name, verdict=str(Verdict.PENDING), message="first pass in progress",
            instance=options.instance,
            source=unit.plan.bundle.source.path if unit.plan else "",
            labels=tuple(sorted(unit.plan.bundle.labels.items())) if unit.plan else ())
        intents.append((unit, replace(base, entries=tuple(sorted(
            [*known.values(), *new.values()], key=lambda e: e.ref))), new))
    if not intents:
        return
    try:
        _ensure_system_namespace(cluster)
        answers: list[object] = fan_out(lambda job: _write_inventory(cluster, job[1]),
                                        intents, options.concurrency)
    except GitgateError as exc:
        answers = [exc] * len(intents)
    for (unit, _, new), answer in zip(intents, answers, strict=True):
        if isinstance(answer, GitgateError):
            unit.result.failed, unit.result.reason = True, Reason.INVENTORY_FAILED
            unit.result.message = (f"cannot record the bundle's objects before writing them "
                                   f"({answer.message}); nothing of it was written")
        else:
            unit.entries.update(new)  # recorded: kept until a later pass prunes them


def _ensure_system_namespace(cluster: ClusterPort) -> None:
    if cluster.get("v1", "Namespace", "", NAMESPACE) is None:
        cluster.apply(system_namespace())


def _levels(order: list[str], work: dict[str, _Work]) -> list[list[str]]:
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
_SKIPPED = "skipped"  # an earlier object of the same bundle failed


def _apply_stages(work: dict[str, _Work], order: list[str], cluster: ClusterPort,
                  options: ApplyOptions, staged: dict[str, dict[int, list[Manifest]]],
                  stop: threading.Event | None = None) -> dict[str, str]:
    """Write every stage; returns the bundles whose suspension does not hold (see
    `_confirm_suspensions`)."""
    groups = _levels(order, work)
    unsafe: dict[str, str] = {}
    for stage in stages.STAGES:
        crds: list[str] = []
        for group in groups:
            batch = [(work[name], obj) for name in _writing(work, group, stage, staged, stop)
                     for obj in staged[name][stage]]
            answers = _send(batch, cluster, options, stop)
            for (unit, obj), answer in zip(batch, answers, strict=True):
                _record(unit, obj, answer, crds)
        if stage == stages.STAGE_SUSPENSION:
            unsafe = _confirm_suspensions(work, staged, cluster, options, stop)
        if crds and not options.dry_run:
            late = cluster.wait_established(crds)
            for unit in work.values():
                if late and not unit.result.failed and any(
                        r.name in late for r in unit.result.applied):
                    unit.result.failed, unit.result.reason = True, Reason.APPLY_FAILED
                    unit.result.message = f"CRD(s) not established in time: {', '.join(late)}"
    return unsafe


def _report_blocked(work: dict[str, _Work]) -> None:
    """A bundle whose overrides were left out fails (its other writes went through)."""
    for unit in work.values():
        if unit.blocked and not unit.result.failed:
            unit.result.failed, unit.result.reason = True, Reason.SUSPENSION_NOT_OBSERVED
            unit.result.message = "; ".join(unit.blocked)


def _send(batch: list[tuple[_Work, Manifest]], cluster: ClusterPort, options: ApplyOptions,
          stop: threading.Event | None) -> list[Action | str | GitgateError]:
    """Apply every object of the batch, `options.concurrency` at a time. After a bundle's
    first failure its objects not yet sent are skipped, as a serial pass would stop there."""
    failing: set[str] = set()

    def send(job: tuple[_Work, Manifest]) -> Action | str:
        unit, obj = job
        if stop is not None and stop.is_set():
            return _INTERRUPTED
        if unit.result.bundle in failing:
            return _SKIPPED
        try:
            return _apply_one(unit, obj, cluster, options)
        except GitgateError:
            failing.add(unit.result.bundle)
            raise

    return fan_out(send, batch, options.concurrency)


def _writing(work: dict[str, _Work], group: list[str], stage: int,
             staged: dict[str, dict[int, list[Manifest]]],
             stop: threading.Event | None) -> list[str]:
    """The bundles of `group` that write in this stage: not failed, not stopped, and none of
    their dependencies failed."""
    out = []
    for name in group:
        unit = work[name]
        if unit.diff is None or unit.result.failed or unit.plan is None:
            continue
        if stop is not None and stop.is_set():
            if staged[name][stage]:
                unit.result.failed, unit.result.reason = True, Reason.INTERRUPTED
                unit.result.message = "stopping: the rest is applied by the next pass"
            continue
        needs = unit.plan.bundle.source.options.depends_on
        blocking = [d for d in needs if d in work and work[d].result.failed]
        if blocking:
            unit.result.failed, unit.result.reason = True, Reason.DEPENDENCY_NOT_READY
            unit.result.message = f"depends on failed bundle(s) {', '.join(blocking)}"
            continue
        out.append(name)
    return out


def _record(unit: _Work, obj: Manifest, answer: Action | str | GitgateError,
            crds: list[str]) -> None:
    """One object's answer into its bundle's result (in the order the objects were given)."""
    if isinstance(answer, GitgateError):
        if not unit.result.failed:  # the first failure names its object
            unit.result.failed, unit.result.reason = True, answer.reason
            unit.result.message = answer.message
        return
    if answer == _INTERRUPTED:
        if not unit.result.failed:
            unit.result.failed, unit.result.reason = True, Reason.INTERRUPTED
            unit.result.message = "stopping: the rest is applied by the next pass"
        return
    if answer == _SKIPPED:
        return
    assert isinstance(answer, Action)
    written = unit.hashed(obj)
    ref = written.ref
    unit.result.changes.add(ref, answer)
    if answer is Action.UNCHANGED:
        return
    unit.entries[ref] = entry_for(written)
    unit.wrote = True
    if ref.kind == "CustomResourceDefinition":
        crds.append(ref.name)


def _read_live(work: dict[str, _Work], cluster: ClusterPort, options: ApplyOptions) -> None:
    """A resync compares what Git sets with the live objects, read with one list per
    apiVersion, kind and namespace (not one GET per object); a list that fails leaves its
    objects to be read one by one."""
    wanted: dict[tuple[str, str, str], list[tuple[_Work, ObjectRef]]] = {}
    for unit in work.values():
        if unit.diff is None or not unit.resync_only:
            continue
        for obj in unit.diff.to_apply:
            ref = ObjectRef.of(obj)
            if ref in unit.resync_only:
                wanted.setdefault((obj["apiVersion"], ref.kind, ref.namespace), []).append(
                    (unit, ref))
    keys = sorted(wanted)
    answers = fan_out(lambda key: cluster.list_objects(*key), keys, options.concurrency)
    for key, answer in zip(keys, answers, strict=True):
        if isinstance(answer, GitgateError):
            continue
        by_name = {o["metadata"]["name"]: o for o in answer}
        for unit, ref in wanted[key]:
            unit.live[ref] = by_name.get(ref.name)


def _apply_one(unit: _Work, obj: Manifest, cluster: ClusterPort,
               options: ApplyOptions) -> Action:
    """Server-side apply, and what the server made of it. A resync reads the object first and
    writes only when a field Git sets has drifted. An immutable field is recreated where the
    object allows it."""
    ref = ObjectRef.of(obj)
    if ref in unit.resync_only:
        live = unit.live[ref] if ref in unit.live else cluster.get(
            obj["apiVersion"], ref.kind, ref.namespace, ref.name)
        if live is not None and in_place(obj, live):
            return Action.UNCHANGED
    try:
        answer = cluster.apply(obj, dry_run=options.dry_run, force=options.force_conflicts)
    except KubeError as exc:
        if not exc.immutable_fields:
            raise
        if unit.steps is not None or not recreate.allows_recreate(obj):
            raise recreate.refusal(obj, exc.immutable_fields, unit.steps is not None) from None
        if not options.dry_run:
            recreate.recreate(cluster, obj, force=options.force_conflicts)
        return Action.RECREATED
    return Action.CREATED if answer.created else Action.CONFIGURED


def _prune(unit: _Work, entries, cluster: ClusterPort, guard: overrides.PruneGuard) -> None:
    """Carry out the prune decision for `entries`, reading each live object first (see
    `prunes.check_live`)."""
    by_ref = {e.ref: e for e in entries}
    for obj in stages.prune_order([prunes.entry_manifest(e) for e in by_ref.values()]):
        ref = ObjectRef.of(obj)
        entry = by_ref[ref]
        try:
            check = prunes.precheck(entry) or prunes.check_live(
                cluster.get(entry.api_version, entry.kind, entry.namespace, entry.name),
                unit.result.bundle, guard)
            if check.outcome is prunes.Outcome.WAITS:
                unit.result.held.append(f"{ref}: {check.why}")
                continue  # still recorded: deleted by the pass after the bundle opens
            if check.outcome is prunes.Outcome.NOT_OWNED:
                unit.result.not_owned.append(ref)
            elif check.outcome is prunes.Outcome.DISABLED:
                unit.result.kept.append(ref)
            elif check.outcome is prunes.Outcome.DELETE:
                cluster.delete(entry.api_version, entry.kind, entry.namespace, entry.name)
                unit.result.changes.add(ref, Action.DELETED)
            unit.entries.pop(ref, None)
            unit.wrote = True
        except GitgateError as exc:
            unit.result.prune_failed.append(ref)
            unit.result.failed, unit.result.reason = True, Reason.PRUNE_FAILED
            unit.result.message = exc.message
    if unit.result.held and not unit.result.message:
        unit.result.message = "; ".join(unit.result.held)


def _suspended(unit: _Work) -> tuple[str, ...] | None:
    """The clusters the unit's verdict suspends ("*": all), None when none."""
    wanted = suspension_for(unit.plan.verdict) if unit.plan is not None else None
    if wanted is None:
        return None
    if wanted.get("dispatching"):
        return ("*",)
    return tuple(wanted["dispatchingOnClusters"]["clusterNames"])


def _overrides_written(work: dict[str, _Work]) -> dict[str, tuple[str, ...]]:
    """Per bundle, the clusters it kept suspended while this pass wrote an override acting
    on it (its own generated ones, or one from another folder): they run the old one."""
    out: dict[str, set[str]] = {}
    for unit in work.values():
        if unit.plan is None:
            continue
        written = set(unit.result.applied)
        acts_on = dict(unit.plan.bundle.acts_on)
        for ref in written:
            targets = acts_on.get(ref, ())
            if ref.group == "policy.karmada.io" and ref.kind in OVERRIDE_KINDS:
                targets = (*targets, unit.result.bundle)
            for target in targets:
                clusters = _suspended(work[target]) if target in work else None
                if clusters:
                    out.setdefault(target, set()).update(clusters)
    return {name: tuple(sorted(clusters)) for name, clusters in out.items()}


def _write_inventories(work: dict[str, _Work], plan: Plan, cluster: ClusterPort,
                       options: ApplyOptions,
                       behind: dict[str, tuple[str, ...]] | None = None) -> int:
    now = rfc3339(options.now)
    changed: list[Inventory] = []
    for name, unit in work.items():
        if unit.plan is None:
            continue
        verdict = unit.plan.verdict
        previous = unit.previous
        state = str(Verdict.FAILED if unit.result.failed else verdict.verdict)
        all_applied = (unit.diff is not None and unit.resync and not unit.result.failed)
        inventory = Inventory(
            bundle=name,
            entries=tuple(unit.entries[r] for r in sorted(unit.entries)),
            revision=plan.revision, digest=verdict.digest, verdict=state,
            reasons=tuple(_reason_dict(r) for r in verdict.reasons),
            message=(f"{unit.result.reason}: {unit.result.message}" if unit.result.message
                     else unit.result.reason or Reason.APPLIED),
            since=previous.since if previous and previous.verdict == state else now,
            last_applied=now if unit.wrote else (previous.last_applied if previous else ""),
            last_full_apply=now if all_applied else (previous.last_full_apply
                                                     if previous else ""),
            instance=options.instance, source=unit.plan.bundle.source.path,
            labels=tuple(sorted(unit.plan.bundle.labels.items())),
            rollout=_rollout_record(unit, options), hooks=_hooks_record(unit, options),
            overrides_behind=_behind_record(unit, (behind or {}).get(name)))
        if previous is not None and previous.status_key() == inventory.status_key() and not (
                all_applied and not options.dry_run):
            continue  # a finished resync is recorded even when everything was in place
        changed.append(inventory)
    if not changed:
        return 0
    _ensure_system_namespace(cluster)
    for answer in fan_out(lambda inventory: _write_inventory(cluster, inventory), changed,
                          options.concurrency):
        if isinstance(answer, GitgateError):
            raise answer
    return len(changed)


def _behind_record(unit: _Work, written_while: tuple[str, ...] | None) -> tuple[str, ...]:
    """Which clusters still run old overrides: those kept suspended while one changed, until
    a pass lifts their suspension (a held or failed pass changes no suspension)."""
    previous = unit.previous.overrides_behind if unit.previous else ()
    if unit.result.failed or unit.diff is None:
        return tuple(sorted(set(previous) | set(written_while or ())))
    return overrides.still_behind(previous, written_while, _suspended(unit))


def _report_hooks(work: dict[str, _Work]) -> None:
    """A bundle whose sync stopped at a failed hook fails with `HookFailed` (its earlier
    writes, SyncFail hooks included, went through); one still syncing says what it waits
    for."""
    for unit in work.values():
        step = unit.plan.hooks if unit.plan is not None else None
        if step is None or unit.result.failed or unit.diff is None:
            continue
        if step.failed:
            unit.result.failed, unit.result.reason = True, Reason.HOOK_FAILED
            unit.result.message = step.failed
        elif step.next_check is not None:
            unit.result.message = f"syncing: {step.waiting_for}"


def _hooks_record(unit: _Work, options: ApplyOptions) -> str:
    """The sync's new state once its writes went through (a failed hook is a state too);
    the previous one otherwise."""
    previous = unit.previous.hooks if unit.previous else ""
    step = unit.plan.hooks if unit.plan is not None else None
    if step is None or options.dry_run or (
            unit.result.failed and unit.result.reason != Reason.HOOK_FAILED):
        return previous
    return step.state.to_json()


def _rollout_record(unit: _Work, options: ApplyOptions) -> str:
    """The rollout's new state once its writes went through; the previous one otherwise (a
    failed or dry-run pass moves no rollout on)."""
    previous = unit.previous.rollout if unit.previous else ""
    if unit.plan is None or unit.plan.rollout is None or unit.result.failed or options.dry_run:
        return previous
    return unit.plan.rollout.state.to_json()


def _write_inventory(cluster: ClusterPort, inventory: Inventory) -> None:
    cluster.apply(to_configmap(inventory))


def _reason_dict(reason) -> dict:
    out = reason.as_dict()
    if reason.until is not None:
        out["until"] = rfc3339(reason.until)
    return out
