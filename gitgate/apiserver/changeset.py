"""What a pass did (or, for `plan --kubeconfig`, would do) to each object, from the server's
answers: one vocabulary for apply, the live diff, inventories, status and metrics. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gitgate.model import Manifest, ObjectRef


class ChangeKind(StrEnum):
    CREATED = "created"  # the server answered 201
    CONFIGURED = "configured"  # the server took a change (200)
    UNCHANGED = "unchanged"  # not sent (same as last applied), or read back and in place
    DELETED = "deleted"  # pruned
    RECREATED = "recreated"  # deleted and created again (an immutable field changed)
    HELD = "held"  # live diff: a held bundle's object, never written
    SKIPPED = "skipped"  # a delete not done: prune disabled, not the bundle's, or the brake
    FAILED = "failed"  # live diff: the object could not be compared
    CONFLICT = "conflict"  # live diff: another gitgate instance owns it (apply refuses it)


WRITES = (ChangeKind.CREATED, ChangeKind.CONFIGURED, ChangeKind.RECREATED)


@dataclass(frozen=True)
class Applied:
    """The server's answer to a server-side apply."""

    obj: Manifest
    created: bool


@dataclass(frozen=True)
class Change:
    ref: ObjectRef
    action: ChangeKind
    fields: tuple[str, ...] = ()  # live diff: the changed field paths (never values)
    message: str = ""
    bundle: str = ""

    @property
    def failed(self) -> bool:
        """The pass would fail the object's bundle (it cannot be compared, or is another
        instance's)."""
        return self.action in (ChangeKind.FAILED, ChangeKind.CONFLICT)

    @property
    def changes_cluster(self) -> bool:
        """A write or a delete: what `plan --exit-code` counts as a change."""
        return self.action in (*WRITES, ChangeKind.DELETED)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"object": str(self.ref), "group": self.ref.group,
                               "kind": self.ref.kind, "namespace": self.ref.namespace,
                               "name": self.ref.name, "action": str(self.action)}
        if self.fields:
            out["fields"] = list(self.fields)
        if self.message:
            out["message"] = self.message
        return out


@dataclass
class ChangeSet:
    changes: list[Change] = field(default_factory=list)

    def add(self, ref: ObjectRef, action: ChangeKind) -> None:
        self.changes.append(Change(ref, action))

    def refs(self, *actions: ChangeKind) -> list[ObjectRef]:
        return [c.ref for c in self.changes if c.action in actions]

    def count(self, *actions: ChangeKind) -> int:
        return sum(1 for c in self.changes if c.action in actions)

    def summary(self) -> dict[str, list[str]]:
        return {str(a): [str(r) for r in self.refs(a)] for a in ChangeKind if self.count(a)}


def in_place(wanted: Any, live: Any) -> bool:
    """Every field Git sets has that value live (lists item by item, so that what the server
    defaults inside list items does not count as drift)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(in_place(v, live.get(k))
                                              for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(wanted) == len(live) and all(
            in_place(w, v) for w, v in zip(wanted, live, strict=True))
    return bool(wanted == live)
