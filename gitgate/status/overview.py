"""What the web page shows beyond the bundles' records, as the last pass planned it: every
gate (active, upcoming or unusable) with whom to ask and what it covers now, each rollout's
waves and timings, and the field paths of each bundle's last change (never a value: a
Secret's keys are not named either). Pure: plans in, a JSON-able document out. The loop keeps
it for its own page and records it on the API server for `gitgate ui`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from gitgate.apply.livediff import changed_paths
from gitgate.gate.evaluate import GateState
from gitgate.model import Manifest, ObjectRef
from gitgate.plan import Plan
from gitgate.status.gaterecord import GateRecord, InvalidGateRecord
from gitgate.timespec import rfc3339

MAX_CHANGED_OBJECTS = 30  # per bundle; the rest are counted
MAX_FIELD_PATHS = 15  # per object; the rest are counted
MAX_COVERS = 200  # bundle names listed per gate; the rest are counted
RECORD_LIMIT = 900_000  # bytes of JSON a ConfigMap can take with room to spare
_SECRET_FIELDS = ("data", "stringData")


def gate_view(state: GateState) -> dict[str, Any]:
    """A gate as the overview records it: its document, with at most MAX_COVERS bundles
    listed."""
    return GateRecord.of(state, MAX_COVERS).document()


@dataclass(frozen=True)
class RolloutView:
    """A bundle's rollout as the page shows it: its waves in order and its timings (the
    progress itself is in the bundle's record)."""

    waves: tuple[str, ...]
    bake: timedelta
    deadline: timedelta
    on_failure: str
    waiting_for: str = ""

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> RolloutView:
        return cls(tuple(str(w) for w in doc.get("waves") or ()),
                   timedelta(seconds=int(doc.get("bakeSeconds") or 0)),
                   timedelta(seconds=int(doc.get("deadlineSeconds") or 0)),
                   str(doc.get("onFailure") or "hold"), str(doc.get("waitingFor") or ""))

    def document(self) -> dict[str, Any]:
        return {"waves": list(self.waves), "bakeSeconds": int(self.bake.total_seconds()),
                "deadlineSeconds": int(self.deadline.total_seconds()),
                "onFailure": self.on_failure, "waitingFor": self.waiting_for}


def rollout_views(plan: Plan) -> dict[str, RolloutView]:
    """Per bundle with `rollout:`, its waves and timings."""
    out: dict[str, RolloutView] = {}
    for item in plan.bundles:
        spec = item.bundle.source.options.rollout
        if spec is None:
            continue
        out[item.bundle.name] = RolloutView(
            tuple(w.text() for w in spec.waves), spec.bake, spec.progress_deadline,
            spec.on_failure, item.rollout.waiting_for if item.rollout is not None else "")
    return out


def rollout_of(overview: Mapping[str, Any], bundle: str) -> RolloutView | None:
    """A bundle's rollout as an overview document records it (None: none recorded)."""
    doc = (overview.get("rollouts") or {}).get(bundle)
    return RolloutView.from_document(doc) if isinstance(doc, Mapping) and doc else None


@dataclass(frozen=True)
class ChangedObject:
    """One object of a bundle's last content change; a changed one with its field paths."""

    object: str
    action: str  # created, changed or removed
    fields: tuple[str, ...] = ()
    fields_more: int = 0

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> ChangedObject:
        return cls(str(doc.get("object") or ""), str(doc.get("action") or ""),
                   tuple(str(f) for f in doc.get("fields") or ()), int(doc.get("fieldsMore") or 0))

    def document(self) -> dict[str, Any]:
        out: dict[str, Any] = {"object": self.object, "action": self.action}
        if self.action == "changed":
            out.update(fields=list(self.fields), fieldsMore=self.fields_more)
        return out


@dataclass(frozen=True)
class LastChange:
    """A bundle's last content change: the commit that made it, when the loop saw it, and
    the objects it created, changed or removed (listed up to a limit, the rest counted)."""

    revision: str
    at: str | None
    objects: tuple[ChangedObject, ...]
    objects_more: int = 0

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> LastChange:
        return cls(str(doc.get("revision") or ""), str(doc["at"]) if doc.get("at") else None,
                   tuple(ChangedObject.from_document(o) for o in doc.get("objects") or ()
                         if isinstance(o, Mapping)), int(doc.get("objectsMore") or 0))

    def document(self) -> dict[str, Any]:
        return {"revision": self.revision, "at": self.at,
                "objects": [o.document() for o in self.objects],
                "objectsMore": self.objects_more}


def change_of(overview: Mapping[str, Any], bundle: str) -> LastChange | None:
    """A bundle's last change as an overview document records it (None: none seen)."""
    doc = (overview.get("changes") or {}).get(bundle)
    return LastChange.from_document(doc) if isinstance(doc, Mapping) else None


def changed_fields(ref: ObjectRef, before: Manifest, after: Manifest) -> list[str]:
    """The dotted paths that differ; in a Secret, `.data` or `.stringData` as a whole (a key's
    name can say what it holds)."""
    paths = changed_paths(before, after)
    if (ref.group, ref.kind) == ("", "Secret"):
        paths = list(dict.fromkeys(
            next((f".{top}" for top in _SECRET_FIELDS
                  if p == f".{top}" or p.startswith(f".{top}.")), p) for p in paths))
    return paths


Blame = Callable[[str], str | None]  # a bundle's folder -> the commit that changed it


def last_changes(previous: Plan | None, plan: Plan, kept: Mapping[str, Any],
                 blame: Blame | None = None) -> dict[str, dict[str, Any]]:
    """Per bundle, the objects its last content change created, changed (with field paths) or
    removed: worked out for the bundles whose digest moved since `previous`, the others keep
    what `kept` says (bundles that left Git are forgotten). The change is said to be of the
    commit `blame` names for the bundle's folder (the newest since `previous` that changed
    its content: not a later commit of a gate or a pause), else of this plan's revision."""
    names = {item.bundle.name for item in plan.bundles}
    out = {name: dict(change) for name, change in kept.items()
           if name in names and isinstance(change, Mapping)}
    if previous is None:
        return out
    before = {item.bundle.name: item for item in previous.bundles}
    for item in plan.bundles:
        old = before.get(item.bundle.name)
        if old is None or (old.bundle.digest and old.bundle.digest == item.bundle.digest):
            continue
        was = {ObjectRef.of(o): o for o in old.desired}
        now = {ObjectRef.of(o): o for o in item.desired}
        objects: list[ChangedObject] = []
        for ref in sorted(was.keys() | now.keys()):
            if ref not in was:
                objects.append(ChangedObject(str(ref), "created"))
            elif ref not in now:
                objects.append(ChangedObject(str(ref), "removed"))
            elif was[ref] is not now[ref] and was[ref] != now[ref]:
                paths = changed_fields(ref, was[ref], now[ref])
                objects.append(ChangedObject(str(ref), "changed", tuple(paths[:MAX_FIELD_PATHS]),
                                             max(0, len(paths) - MAX_FIELD_PATHS)))
        if objects:
            out[item.bundle.name] = LastChange(
                (blame(item.bundle.source.path) if blame else None) or plan.revision,
                rfc3339(plan.at), tuple(objects[:MAX_CHANGED_OBJECTS]),
                max(0, len(objects) - MAX_CHANGED_OBJECTS)).document()
    return out


def overview_document(plan: Plan, previous: Plan | None,
                      kept_changes: Mapping[str, Any], blame: Blame | None = None
                      ) -> dict[str, Any]:
    """The page's view of a pass; `kept_changes`: the last changes known before it;
    `blame`: which commit changed a bundle's folder (`last_changes`)."""
    doc = {"revision": plan.revision,
           "gates": [gate_view(s) for s in plan.gates],
           "invalidGates": [InvalidGateRecord.of(g).document() for g in plan.invalid_gates],
           "rollouts": {name: view.document() for name, view in rollout_views(plan).items()},
           "changes": last_changes(previous, plan, kept_changes, blame)}
    return bounded(doc)


def bounded(doc: dict[str, Any], limit: int = RECORD_LIMIT) -> dict[str, Any]:
    """Within what one ConfigMap holds: the last changes go first, then the rollouts (the
    page says they are left out); gates are what on-call people need, they stay."""
    for part in ("changes", "rollouts"):
        if len(json.dumps(doc, sort_keys=True)) <= limit:
            break
        doc = {**doc, part: {}, f"{part}LeftOut": True}
    return doc



def merged_overview(parts: Mapping[str, Mapping[str, Any]],
                    owner: Callable[[str], str | None]) -> dict[str, Any]:
    """The page's overview under `run --shard`, where each replica records the part of its
    own bundles (`parts`, by replica; `owner`: which replica holds a bundle now). A bundle's
    rollout comes from its owner's part only: a part a departed replica left says nothing. Its
    last change comes from its owner's part, else from any part (a bundle that moved keeps
    its last change until its new owner sees one). The gates, the same for every replica at
    one revision, come from the part of the replica that holds them (else any, by name)."""
    if not parts:
        return {}
    gates_from = owner("gitgate.gates")
    first = parts.get(gates_from or "") or parts[min(parts)]
    doc: dict[str, Any] = {key: first.get(key) for key in ("revision", "gates", "invalidGates")}
    rollouts: dict[str, Any] = {}
    changes: dict[str, Any] = {}
    for part, recorded in sorted(parts.items()):
        for bundle, spec in (recorded.get("rollouts") or {}).items():
            if owner(bundle) == part:
                rollouts[bundle] = spec
        for bundle, change in (recorded.get("changes") or {}).items():
            if owner(bundle) == part or bundle not in changes:
                changes[bundle] = change
    doc.update(rollouts=rollouts, changes=changes)
    for flag in ("rolloutsLeftOut", "changesLeftOut"):
        if any(recorded.get(flag) for recorded in parts.values()):
            doc[flag] = True
    return doc
