"""A gate as gitgate shows it: one record that `gates` (table, JSON, YAML), the page's
overview document and the web page's gates all render, and one JSON document for it (a
`GateList` item in docs/schema/gitgate.io_v1alpha1.json; the page's overview records the
same). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitgate.gate.evaluate import GateState
from gitgate.timespec import duration_text, rfc3339


@dataclass(frozen=True)
class GateRecord:
    """Times are RFC 3339 text (None when not known), as the document has them."""

    name: str
    file: str
    action: str  # hold or suspend
    reason: str
    owner: str | None = None
    active: bool = True
    covers: tuple[str, ...] = ()  # the bundles it covers now (listed up to a limit)
    covers_more: int = 0  # how many more it covers than `covers` lists
    clusters: tuple[str, ...] = ()  # the member clusters it is about (none: every one)
    until: str | None = None
    next_change: str | None = None
    since: str | None = None  # an active gate: when it began to hold
    windows: tuple[str, ...] = ()  # `cron for 8h (UTC)`

    @classmethod
    def of(cls, state: GateState, max_covers: int | None = None) -> GateRecord:
        """The gate as a plan evaluated it; `max_covers`: list at most that many bundles
        (the rest are counted)."""
        gate, covers = state.gate, tuple(state.covers)
        listed = covers if max_covers is None else covers[:max_covers]
        return cls(gate.name, gate.file, str(gate.action), gate.reason, gate.owner,
                   state.active, listed, len(covers) - len(listed), tuple(gate.clusters),
                   _time(gate.until), _time(state.next_change), _time(state.since),
                   tuple(f"{w.cron} for {duration_text(w.duration)} ({w.time_zone})"
                         for w in gate.windows))

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> GateRecord:
        """A gate as a recorded overview has it (`document`'s shape)."""
        return cls(str(doc.get("name") or ""), str(doc.get("file") or ""),
                   str(doc.get("action") or "hold"), str(doc.get("reason") or ""),
                   _text(doc.get("owner")), bool(doc.get("active")),
                   tuple(str(c) for c in doc.get("covers") or ()),
                   int(doc.get("coversMore") or 0),
                   tuple(str(c) for c in doc.get("clusters") or ()),
                   _text(doc.get("until")), _text(doc.get("nextChange")),
                   _text(doc.get("since")), tuple(str(w) for w in doc.get("windows") or ()))

    def document(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "action": self.action,
                "reason": self.reason, "owner": self.owner, "active": self.active,
                "covers": list(self.covers), "coversMore": self.covers_more,
                "clusters": list(self.clusters), "until": self.until,
                "nextChange": self.next_change, "since": self.since,
                "windows": list(self.windows)}


def _time(value: Any) -> str | None:
    return rfc3339(value) if value else None


def _text(value: Any) -> str | None:
    return str(value) if value else None
