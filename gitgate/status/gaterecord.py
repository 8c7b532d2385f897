"""A gate as gitgate shows it: one record that `gates` (table, JSON, YAML), the page's
overview document and the web page's gates all render, and one JSON document for it (the
`gate` of docs/schema/gitgate.io_v1alpha1.json, `GateList`'s items; the page's overview
records the same). The gate's part is `model.gaterule.ShownGate`, copied from the `Gate` field
by field; the record adds what a plan evaluated. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import Enum
from typing import Any

from gitgate.gate.evaluate import GateState
from gitgate.model.gaterule import SHOWN_FIELDS, InvalidGate, ShownGate, ShownKey, Window, shown_key
from gitgate.timespec import duration_text, rfc3339


@dataclass(frozen=True)
class GateRecord(ShownGate):
    """Times are RFC 3339 text (None when not known), as the document has them."""

    active: bool = field(default=True, metadata=shown_key("active", {"type": "boolean"},
                                                      required=True))
    covers: tuple[str, ...] = field(default=(), metadata=shown_key(
        "covers", {"type": "array", "items": {"type": "string"}},
        "the bundles it covers now", required=True))
    covers_more: int = field(default=0, metadata=shown_key(
        "coversMore", {"type": "integer", "minimum": 0},
        "how many more bundles it covers than `covers` lists (the page's overview lists a few; "
        "`gates` lists all: 0)"))
    next_change: str | None = field(default=None, metadata=shown_key(
        "nextChange", {"$ref": "#/$defs/time"}, required=True))
    since: str | None = field(default=None, metadata=shown_key(
        "since", {"$ref": "#/$defs/time"}, "an active gate: when it began to hold (its "
        "window's start, or when `gitgate pause` wrote it); null when not known"))

    @classmethod
    def of(cls, state: GateState, max_covers: int | None = None) -> GateRecord:
        """The gate as a plan evaluated it; `max_covers`: list at most that many bundles
        (the rest are counted)."""
        gate, covers = state.gate, tuple(state.covers)
        listed = covers if max_covers is None else covers[:max_covers]
        shown = {f.name: _as_shown(getattr(gate, f.name)) for f in SHOWN_FIELDS}
        return cls(**shown, active=state.active, covers=listed,
                   covers_more=len(covers) - len(listed),
                   next_change=_time(state.next_change), since=_time(state.since))

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> GateRecord:
        """A gate as a recorded overview has it (`document`'s shape)."""
        return cls(**{f.name: _read(f.metadata["shown"], doc.get(f.metadata["shown"]["key"]))
                      for f in _FIELDS})

    def document(self) -> dict[str, Any]:
        return {f.metadata["shown"]["key"]: _written(getattr(self, f.name)) for f in _FIELDS}

    @staticmethod
    def schema() -> dict[str, Any]:
        """The JSON Schema of its document (`gate` in docs/schema/gitgate.io_v1alpha1.json;
        `tools/write_schemas.py` writes it there)."""
        return {"type": "object",
                "required": [f.metadata["shown"]["key"] for f in _FIELDS
                             if f.metadata["shown"]["required"]],
                "properties": {f.metadata["shown"]["key"]: f.metadata["shown"]["schema"]
                               for f in _FIELDS}}


_FIELDS = tuple(f for f in fields(GateRecord) if "shown" in f.metadata)


@dataclass(frozen=True)
class InvalidGateRecord:
    """A gate file gitgate cannot use, as `gates -o json/yaml`, the page's overview and the
    web page show it: it holds every bundle, or those under `within` (a tenant's folders)."""

    file: str
    message: str
    line: int | None = None
    within: tuple[str, ...] = ()

    @classmethod
    def of(cls, gate: InvalidGate) -> InvalidGateRecord:
        return cls(gate.file, gate.message, gate.line, tuple(gate.within))

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> InvalidGateRecord:
        line = doc.get("line")
        return cls(str(doc.get("file") or ""), str(doc.get("message") or ""),
                   line if isinstance(line, int) and line else None,
                   tuple(str(w) for w in doc.get("within") or ()))

    def where(self) -> str:
        """`file:line`, the file alone when no line is known."""
        return f"{self.file}:{self.line}" if self.line else self.file

    def document(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "message": self.message,
                "within": list(self.within)}


def recorded_gates(overview: Mapping[str, Any]
                   ) -> tuple[list[GateRecord], list[InvalidGateRecord]] | None:
    """The gates and invalid gate files an overview document records (None: it records
    none)."""
    gates = overview.get("gates")
    if not isinstance(gates, list):
        return None
    return ([GateRecord.from_document(g) for g in gates if isinstance(g, Mapping)],
            [InvalidGateRecord.from_document(g) for g in overview.get("invalidGates") or ()
             if isinstance(g, Mapping)])


def _as_shown(value: Any) -> Any:
    """A gate's value as the record has it: times and windows as text, names as tuples."""
    if isinstance(value, datetime):
        return rfc3339(value)
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, tuple):
        return tuple(_as_shown(v) for v in value)
    if isinstance(value, Window):
        return f"{value.cron} for {duration_text(value.duration)} ({value.time_zone})"
    return value


def _read(key: ShownKey, value: Any) -> Any:
    """A document's value as the record has it, by the type its schema gives."""
    kind = key["schema"].get("type")
    if kind == "array":
        return tuple(str(v) for v in value or ())
    if kind == "boolean":
        return bool(value)
    if kind == "integer":
        return int(value or 0)
    if kind == "string" or "enum" in key["schema"]:
        first = key["schema"].get("enum", [""])
        return str(value or (first[0] if isinstance(first, list) else ""))
    return str(value) if value else None


def _written(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _time(value: Any) -> str | None:
    return rfc3339(value) if value else None
