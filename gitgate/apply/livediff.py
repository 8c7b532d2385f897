"""`plan --kubeconfig`: what a pass would change, object by object, found with server-side
dry-run applies. Only field paths are reported, never values (Secret data stays unseen)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitgate.apply.engine import ApplyOptions, ClusterPort, read_inventories
from gitgate.errors import GitgateError
from gitgate.gate.evaluate import Verdict
from gitgate.model import Manifest, ObjectRef
from gitgate.plan import Plan

_VOLATILE_META = {"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp",
                  "selfLink"}


@dataclass(frozen=True)
class Change:
    bundle: str
    ref: ObjectRef
    action: str  # create | update | unchanged | prune | held | error
    fields: tuple[str, ...] = ()
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"object": str(self.ref), "action": self.action}
        if self.fields:
            out["fields"] = list(self.fields)
        if self.message:
            out["message"] = self.message
        return out


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
            action = "held" if verdict is Verdict.HELD else "error"
            changes += [Change(name, ObjectRef.of(o), action) for o in desired]
            continue
        held = set(item.verdict.held_objects)
        for obj in desired:
            ref = ObjectRef.of(obj)
            if ref in held:
                changes.append(Change(name, ref, "held", message="held through a dependency"))
                continue
            changes.append(_object_change(name, obj, cluster, options))
        wanted = {ObjectRef.of(o) for o in desired} | held
        previous = inventories.get(name)
        for entry in previous.entries if previous else ():
            if entry.ref not in wanted:
                changes.append(Change(name, entry.ref, "prune"))
    return changes


def _object_change(bundle: str, obj: Manifest, cluster: ClusterPort,
                   options: ApplyOptions) -> Change:
    ref = ObjectRef.of(obj)
    meta = obj["metadata"]
    try:
        live = cluster.get(obj["apiVersion"], obj["kind"], meta.get("namespace", ""),
                           meta["name"])
        if live is None:
            return Change(bundle, ref, "create")
        after = cluster.apply(obj, dry_run=True, force=options.force_conflicts)
    except GitgateError as exc:
        return Change(bundle, ref, "error", message=exc.message)
    fields = changed_paths(_comparable(live), _comparable(after))
    return Change(bundle, ref, "update" if fields else "unchanged", tuple(fields))
