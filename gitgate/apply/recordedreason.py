"""Why a bundle is held, suspended, halted or failed, as its record keeps it: the typed reason
a `Bundle` record carries (`apply.inventory.Inventory.reasons`) and every printer reads. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitgate.model import HoldReason
from gitgate.timespec import rfc3339


@dataclass(frozen=True)
class RecordedReason:
    """Why a bundle is held, suspended, halted or failed, as its record keeps it (a
    `HoldReason` with its time as RFC 3339): the one reason every printer reads, and one
    JSON document for it (`holdReason` in docs/schema/gitgate.io_v1alpha1.json)."""

    kind: str  # a ReasonKind
    gate: str  # the gate's name, `rollout`, a label, a dependency
    file: str
    reason: str
    action: str = "hold"  # hold or suspend
    until: str | None = None
    line: int | None = None
    clusters: tuple[str, ...] = ()
    target: str | None = None  # the object a label or dependency hold is about

    @classmethod
    def of(cls, recorded: Mapping[str, Any]) -> RecordedReason:
        """A reason as a record (or an older record) has it."""
        line = recorded.get("line")
        return cls(str(recorded.get("kind") or ""), str(recorded.get("gate") or ""),
                   str(recorded.get("file") or ""), str(recorded.get("reason") or ""),
                   str(recorded.get("action") or "hold"),
                   str(recorded["until"]) if recorded.get("until") else None,
                   int(line) if isinstance(line, int) and line else None,
                   tuple(str(c) for c in recorded.get("clusters") or ()),
                   str(recorded["object"]) if recorded.get("object") else None)

    @classmethod
    def of_hold(cls, reason: HoldReason) -> RecordedReason:
        return cls(str(reason.kind), reason.gate, reason.file, reason.reason,
                   str(reason.action), rfc3339(reason.until) if reason.until else None,
                   reason.line or None, tuple(reason.clusters),
                   str(reason.target) if reason.target is not None else None)

    def where(self) -> str:
        """`file:line`, the file alone when no line is known ("" when no file)."""
        return f"{self.file}:{self.line}" if self.file and self.line else self.file

    def document(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "gate": self.gate, "file": self.file,
                               "reason": self.reason, "action": self.action,
                               "until": self.until}
        if self.line:
            out["line"] = self.line
        if self.clusters:
            out["clusters"] = list(self.clusters)
        if self.target is not None:
            out["object"] = self.target
        return out
