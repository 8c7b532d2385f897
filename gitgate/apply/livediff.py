"""`plan --kubeconfig`: what a pass would change, object by object, found with server-side
dry-run applies, in the ChangeSet's vocabulary (created, configured, unchanged, deleted, held,
skipped, failed). Only field paths are reported, never values (Secret data stays unseen)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gitgate.apiserver.changeset import Change, ChangeKind
from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import overrides, prunedecision
from gitgate.apply.inventory import Entry, Inventory, diff
from gitgate.apply.owners import frozen_holder, frozen_message
from gitgate.apply.work import ApplyOptions
from gitgate.errors import GitgateError, Reason
from gitgate.model import Manifest, ObjectRef, Verdict
from gitgate.model.ownership import INSTANCE_LABEL, other_instance, with_instance
from gitgate.plan import Plan
from gitgate.progression.liveowners import OwnerFreezes, owner_freezes

_VOLATILE_META = {"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp",
                  "selfLink"}


def _comparable(obj: Manifest) -> Manifest:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_META}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def changed_paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Dotted paths whose value differs (pure)."""
    if isinstance(before, dict) and isinstance(after, dict):
        paths: list[str] = []
        for key in sorted(set(before) | set(after)):
            paths += changed_paths(before.get(key), after.get(key), f"{prefix}.{key}")
        return paths
    return [prefix or "."] if before != after else []


def live_diff(plan: Plan, cluster: ClusterPort, options: ApplyOptions,
              inventories: Mapping[str, Inventory],
              scope: Callable[[str], bool] | None = None) -> list[Change]:
    """Every object's change, then what the pass would delete: the prune decision the engine
    carries out (`apply.prunedecision`), each delete checked against the live object as the engine
    checks it. `inventories`: as the pass's view read them. `scope`: as `apply --bundle` (no
    bundle outside it is taken for gone)."""
    failed = prunedecision.failed_inventories(plan, inventories)
    freezes = owner_freezes(plan, inventories)
    changes: list[Change] = []
    leftovers: dict[str, tuple[Entry, ...]] = {}
    for item in plan.bundles:
        name = item.bundle.name
        verdict = item.verdict.verdict
        desired = [*item.desired, *item.policies]
        if verdict in (Verdict.HELD, Verdict.FAILED):
            action = ChangeKind.HELD if verdict is Verdict.HELD else ChangeKind.FAILED
            changes += [Change(ObjectRef.of(o), action, bundle=name) for o in desired]
            continue
        kept = prunedecision.kept_back(item, failed)
        for obj in desired:
            ref = ObjectRef.of(obj)
            if ref in kept:
                why = (f"held with {', '.join(kept[ref])} (failed to render)" if kept[ref]
                       else "held through a dependency")
                changes.append(Change(ref, ChangeKind.HELD, message=why, bundle=name))
                continue
            changes.append(_object_change(name, obj, cluster, options, freezes))
        leftovers[name] = diff(item.written, inventories.get(name), resync=False,
                               keep=frozenset(kept)).to_prune
    decision = prunedecision.decide(plan, inventories, leftovers, scope, options.allow_mass_prune)
    guard = overrides.prune_guard((b.bundle for b in plan.bundles),
                                  {b.bundle.name: b.verdict.verdict for b in plan.bundles}, {},
                                  plan.frozen_live)
    for name, entries in decision.leftovers.items():
        changes += _deletes(name, entries, decision, cluster, guard, options.instance)
    for name, gone in decision.gone.items():
        if gone.held:
            why = "; ".join(f"{r.file}: {r.reason}" for r in gone.holds)
            changes += [Change(e.ref, ChangeKind.HELD, message=f"left Git, held: {why}",
                               bundle=name) for e in gone.inventory.entries]
        else:
            changes += _deletes(name, gone.inventory.entries, decision, cluster, guard,
                                options.instance)
    return changes


def _deletes(bundle: str, entries: tuple[Entry, ...], decision: prunedecision.PruneDecision,
             cluster: ClusterPort, guard: overrides.PruneGuard, instance: str) -> list[Change]:
    if decision.blocked:
        message = f"{Reason.PRUNE_BLOCKED}: {decision.brake_message(len(entries))}"
        return [Change(e.ref, ChangeKind.SKIPPED, message=message, bundle=bundle) for e in entries]
    out = []
    for entry in entries:
        try:
            check = prunedecision.precheck(entry) or prunedecision.check_live(
                cluster.get(entry.api_version, entry.kind, entry.namespace, entry.name),
                bundle, guard, instance)
        except GitgateError as exc:
            out.append(Change(entry.ref, ChangeKind.FAILED, message=exc.message, bundle=bundle))
            continue
        shown = check.outcome.handling.shown
        if shown is not None:
            out.append(Change(entry.ref, shown, message=check.why, bundle=bundle))
    return out


def _object_change(bundle: str, obj: Manifest, cluster: ClusterPort,
                   options: ApplyOptions, freezes: OwnerFreezes) -> Change:
    ref = ObjectRef.of(obj)
    meta = obj["metadata"]
    try:
        live = cluster.get(obj["apiVersion"], obj["kind"], meta.get("namespace", ""),
                           meta["name"])
        if live is None:
            return Change(ref, ChangeKind.CREATED, bundle=bundle)
        owner = None if options.force_conflicts else other_instance(live, options.instance)
        if owner is not None:
            return Change(ref, ChangeKind.CONFLICT, bundle=bundle, message=(
                f"owned by instance {owner} (its {INSTANCE_LABEL} label): apply refuses to "
                "take it over, unless --force-conflicts"))
        held = frozen_holder(freezes, live, bundle) if owner is None else None
        if held is not None:  # live in a frozen bundle, whatever the records say
            return Change(ref, ChangeKind.FAILED, bundle=bundle,
                          message=frozen_message(ref, held))
        after = cluster.apply(with_instance(obj, options.instance), dry_run=True,
                              force=options.force_conflicts).obj
    except GitgateError as exc:
        return Change(ref, ChangeKind.FAILED, message=exc.message, bundle=bundle)
    fields = changed_paths(_comparable(live), _comparable(after))
    return Change(ref, ChangeKind.CONFIGURED if fields else ChangeKind.UNCHANGED, tuple(fields),
                  bundle=bundle)
