"""Carrying out the prune decision (`apply.prunedecision`): each delete checked against the live
object first; a bundle that left Git loses its objects, then its inventory."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from gitgate.apiserver.changeset import ChangeKind
from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import overrides, prunedecision, stages
from gitgate.apply.inventory import DEFAULT_INSTANCE, Entry, Inventory
from gitgate.apply.work import ApplyOptions, BundleResult, BundleWork, RecordStore
from gitgate.apply.writes import late_frozen
from gitgate.errors import GitgateError, Reason
from gitgate.model import ObjectRef, Verdict


def prune_entries(unit: BundleWork, entries: Iterable[Entry], cluster: ClusterPort,
                  guard: overrides.PruneGuard, options: ApplyOptions | None = None,
                  claimer: Callable[[ObjectRef], str | None] | None = None) -> None:
    """Carry out the prune decision for `entries`, reading each live object first (see
    `prunedecision.check_live`). A freeze committed since the pass began that covers the bundle
    (`options.late_freeze`) stops its deletes where they are. An object another bundle
    claims now (`claimer`) is never deleted: it leaves this bundle's record for that one's."""
    by_ref = {e.ref: e for e in entries}
    for obj in stages.prune_order([prunedecision.entry_manifest(e) for e in by_ref.values()]):
        ref = ObjectRef.of(obj)
        entry = by_ref[ref]
        why = options.frozen_late(unit.result.bundle) if options is not None else None
        if why is not None:
            late_frozen(unit, why)
            return
        other = claimer(ref) if claimer is not None else None
        if other is not None and other != unit.result.bundle:
            unit.result.not_owned.append(ref)
            unit.entries.pop(ref, None)
            unit.wrote = True
            continue
        try:
            check = prunedecision.precheck(entry) or prunedecision.check_live(
                cluster.get(entry.api_version, entry.kind, entry.namespace, entry.name),
                unit.result.bundle, guard,
                options.instance if options is not None else DEFAULT_INSTANCE)
            handling = check.outcome.handling
            if handling.deletes:
                cluster.delete(entry.api_version, entry.kind, entry.namespace, entry.name)
                unit.result.changes.add(ref, ChangeKind.DELETED)
            _list(unit.result, handling.listed, ref, check.why)
            if handling.stays:
                continue  # still recorded: the pass after the bundle opens retries it
            unit.entries.pop(ref, None)
            unit.wrote = True
        except GitgateError as exc:
            unit.result.prune_failed.append(ref)
            unit.result.fail(Reason.PRUNE_FAILED, exc.message)
    if unit.result.held and not unit.result.message:
        unit.result.message = "; ".join(unit.result.held)


def _list(result: BundleResult, listed: prunedecision.Listed, ref: ObjectRef, why: str) -> None:
    if listed is prunedecision.Listed.HELD:
        result.held.append(f"{ref}: {why}")
    elif listed is prunedecision.Listed.NOT_OWNED:
        result.not_owned.append(ref)
    elif listed is prunedecision.Listed.KEPT:
        result.kept.append(ref)


def prune_gone_bundle(name: str, inventory: Inventory, cluster: ClusterPort,
                       options: ApplyOptions, guard: overrides.PruneGuard,
                       ledger: RecordStore,
                       claimer: Callable[[ObjectRef], str | None] | None = None) -> BundleWork:
    """Delete every object of a bundle that left Git, then its inventory; what could not be
    deleted stays in the inventory."""
    orphan = BundleWork(None, inventory, None, BundleResult(name, str(Verdict.REMOVED)),
                   dict(inventory.by_ref()))
    prune_entries(orphan, inventory.entries, cluster, guard, options, claimer)
    if not orphan.entries:
        ledger.delete(cluster, name, options.instance)
    else:
        if not orphan.result.failed:
            orphan.result.fail(Reason.PRUNE_FAILED, orphan.result.message)
        ledger.write(cluster, replace(inventory, entries=tuple(orphan.entries.values()),
                                      message=orphan.result.message))
    return orphan


def release_taken(work: Mapping[str, BundleWork], gone: Iterable[tuple[str, Inventory]],
                  cluster: ClusterPort, ledger: RecordStore) -> None:
    """The records of bundles that left Git but stay (held, or the pass pruned nothing) give
    up the objects a bundle of this pass wrote: those are that bundle's now. Records stay
    disjoint, so a stale entry never keeps, freezes or prunes what another bundle owns."""
    taken = {ref for unit in work.values() if unit.plan is not None
             for ref in unit.result.applied}
    if not taken:
        return
    for name, inventory in gone:
        stale = [ref for ref in inventory.by_ref() if ref in taken]
        if not stale:
            continue
        kept = tuple(e for e in inventory.entries if e.ref not in taken)
        unit = work.get(name)
        if unit is not None:
            for ref in stale:
                unit.entries.pop(ref, None)
        try:
            ledger.write(cluster, replace(inventory, entries=kept))
        except GitgateError:
            continue  # written by a later pass; meanwhile the two records list the object
            # (`inventory.contested`: the bundle that claims it writes it)
