"""`plan --kubeconfig`: what a pass would change, object by object, found with server-side
dry-run applies, in the ChangeSet's vocabulary (created, configured, unchanged, deleted, held,
failed). Only field paths are reported, never values (Secret data stays unseen)."""

from __future__ import annotations

from typing import Any

from gitgate.apply.changeset import Action, Change
from gitgate.apply.engine import ApplyOptions, ClusterPort, read_inventories
from gitgate.errors import GitgateError
from gitgate.model import Manifest, ObjectRef, Verdict
from gitgate.plan import Plan

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


def live_diff(plan: Plan, cluster: ClusterPort, options: ApplyOptions) -> list[Change]:
    inventories = read_inventories(cluster, options.instance)
    changes: list[Change] = []
    for item in plan.bundles:
        name = item.bundle.name
        verdict = item.verdict.verdict
        desired = [*item.desired, *item.policies]
        if verdict in (Verdict.HELD, Verdict.FAILED):
            action = Action.HELD if verdict is Verdict.HELD else Action.FAILED
            changes += [Change(ObjectRef.of(o), action, bundle=name) for o in desired]
            continue
        held = set(item.verdict.held_objects)
        for obj in desired:
            ref = ObjectRef.of(obj)
            if ref in held:
                changes.append(Change(ref, Action.HELD, message="held through a dependency",
                                      bundle=name))
                continue
            changes.append(_object_change(name, obj, cluster, options))
        wanted = {ObjectRef.of(o) for o in desired} | held | set(item.kept)
        previous = inventories.get(name)
        for entry in previous.entries if previous else ():
            if entry.ref not in wanted:
                changes.append(Change(entry.ref, Action.DELETED, bundle=name))
    return changes


def _object_change(bundle: str, obj: Manifest, cluster: ClusterPort,
                   options: ApplyOptions) -> Change:
    ref = ObjectRef.of(obj)
    meta = obj["metadata"]
    try:
        live = cluster.get(obj["apiVersion"], obj["kind"], meta.get("namespace", ""),
                           meta["name"])
        if live is None:
            return Change(ref, Action.CREATED, bundle=bundle)
        after = cluster.apply(obj, dry_run=True, force=options.force_conflicts).obj
    except GitgateError as exc:
        return Change(ref, Action.FAILED, message=exc.message, bundle=bundle)
    fields = changed_paths(_comparable(live), _comparable(after))
    return Change(ref, Action.CONFIGURED if fields else Action.UNCHANGED, tuple(fields),
                  bundle=bundle)
