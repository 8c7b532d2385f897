"""What gitgate decided for a bundle, and every reason for it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from gitgate.model.gaterule import Action
from gitgate.model.objects import ObjectRef


class Verdict(StrEnum):
    APPLY = "apply"
    HELD = "held"
    SUSPENDED = "suspended"
    HALTED = "halted"  # a rollout stopped: the clusters after the failed wave stay suspended
    FAILED = "failed"
    # what a pass reports, never what a plan decides:
    REMOVED = "removed"  # the bundle left Git and was pruned
    PENDING = "pending"  # an inventory written ahead of a bundle's first pass


class ReasonKind(StrEnum):
    GATE = "gate"
    PAUSE_FILE = "pause-file"
    LABEL = "label"
    INVALID_GATE = "invalid-gate"
    DEPENDENCY = "dependency"
    APPROVED = "approved"
    RENDER = "render"
    ROLLOUT = "rollout"
    UNREADABLE = "unreadable"  # what Karmada did could not be read: a step cannot be decided
    FROZEN = "frozen"  # an object live in a frozen bundle (`progression.livefreeze`)


@dataclass(frozen=True)
class HoldReason:
    kind: ReasonKind
    gate: str
    file: str
    reason: str
    action: Action = Action.HOLD
    until: datetime | None = None
    clusters: tuple[str, ...] = ()
    target: ObjectRef | None = None  # the object a label or dependency hold is about
    line: int | None = None  # where in `file`, when the reason is about one line of it

    def where(self) -> str:
        """`file:line`, or the file alone when no line is known."""
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": str(self.kind), "gate": self.gate, "file": self.file,
                                  "reason": self.reason, "action": str(self.action),
                                  "until": self.until.isoformat() if self.until else None}
        if self.line:
            out["line"] = self.line
        if self.clusters:
            out["clusters"] = list(self.clusters)
        if self.target is not None:
            out["object"] = str(self.target)
        return out


def described(reasons: tuple[HoldReason, ...] | list[HoldReason]) -> str:
    """Every reason as `file:line: why`, joined: the one wording of a verdict's reasons in
    tables, results, logs and reports."""
    return "; ".join(f"{r.where()}: {r.reason}" for r in reasons)


@dataclass(frozen=True)
class BundleVerdict:
    bundle: str
    verdict: Verdict
    digest: str
    reasons: tuple[HoldReason, ...] = ()
    next_change: datetime | None = None
    held_objects: tuple[ObjectRef, ...] = ()  # objects of an open bundle held by a dependency
    suspend_clusters: tuple[str, ...] | None = None  # None: all clusters (when suspended)
    # a freeze covers the bundle through the identity it is live under (its record), not
    # the one the commit gives it: its record keeps that identity (`progression.livefreeze`)
    by_live_identity: bool = False
