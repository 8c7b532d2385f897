"""A gate as gitgate uses it once its file is parsed and validated, and as every printer shows
it. Each field says where the gate file writes it (`spec`: its key, JSON Schema and how it is
read) and each shown field its key in the gate's document, so a new field is a field here:
`gate/spec.py` reads the keys of a known kind, `status/gaterecord.py` carries the shown fields
to `gates -o json/yaml`, the overview and the page, and `python tools/write_schemas.py` writes
both schemas (docs/schema/gate.json's `spec`, the `gate` of gitgate.io_v1alpha1.json)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypedDict


class Action(StrEnum):
    HOLD = "hold"
    SUSPEND = "suspend"


@dataclass(frozen=True)
class Unreadable:
    """A file in the gates folder gitgate will not read as a gate, and why; like an invalid
    gate it holds every bundle (fail closed)."""

    why: str


# a gate file's text, or why there is none to read
GateText = str | Unreadable | None


@dataclass(frozen=True)
class Window:
    cron: str
    duration: timedelta
    time_zone: str = "UTC"


@dataclass(frozen=True)
class Approval:
    bundle: str
    digest: str


class ValueKind(StrEnum):
    """How a gate file writes a value that `gate/spec.py` reads alike for every key of it."""

    TEXT = "text"  # a non-empty string, trimmed (absent: None)
    TIME = "time"  # RFC 3339 with a zone (absent: None)


class SpecKey(TypedDict):
    """Where a gate file writes a field: `spec.KEY`, typed by `schema` (a JSON Schema), read
    by `gate/spec.py` as its `kind` says (None: by its own code there)."""

    key: str
    schema: dict[str, object]
    kind: ValueKind | None


class ShownKey(TypedDict):
    """A shown field's key in the gate's document, typed by `schema`; `required`: always
    there (null when not known)."""

    key: str
    schema: dict[str, object]
    required: bool


_KIND_SCHEMA: dict[ValueKind, dict[str, object]] = {
    ValueKind.TEXT: {"type": "string", "pattern": "\\S"},
    ValueKind.TIME: {"$ref": "#/$defs/time"},
}
_NAMES: dict[str, object] = {"oneOf": [
    {"type": "string", "minLength": 1},
    {"type": "array", "items": {"type": "string", "minLength": 1}}]}
_TEXTS: dict[str, object] = {"type": "array", "items": {"type": "string"}}


def _spec(key: str, description: str, kind: ValueKind | None = None,
          schema: dict[str, object] | None = None) -> dict[str, SpecKey]:
    typed = schema if schema is not None else _KIND_SCHEMA[kind] if kind else {}
    return {"spec": SpecKey(key=key, schema={"description": description, **typed}, kind=kind)}


def shown_key(key: str, schema: dict[str, object], description: str = "",
           required: bool = False) -> dict[str, ShownKey]:
    return {"shown": ShownKey(key=key, required=required, schema=(
        {"description": description} if description else {}) | schema)}


@dataclass(frozen=True)
class Gate:
    name: str
    file: str
    reason: str = field(metadata=_spec("reason", "why: shown wherever the bundles are held",
                                       schema=_KIND_SCHEMA[ValueKind.TEXT]))
    action: Action = field(default=Action.HOLD, metadata=_spec(
        "action", "hold stops every write; suspend stops Karmada's dispatch (to `clusters`, "
        "or all)", schema={"enum": [str(a) for a in Action]}))
    bundles: tuple[str, ...] = field(default=(), metadata=_spec(
        "bundles", "bundle name globs (shop/*)", schema=_NAMES))
    match_labels: dict[str, str] = field(default_factory=dict, metadata=_spec(
        "selector", "the bundles whose labels match", schema={
            "type": "object", "additionalProperties": False, "required": ["matchLabels"],
            "properties": {"matchLabels": {"type": "object", "minProperties": 1,
                                           "additionalProperties": {"type": "string"}}}}))
    clusters: tuple[str, ...] = field(default=(), metadata=_spec(
        "clusters", "with action: suspend, only these member clusters", schema=_NAMES))
    until: datetime | None = field(default=None, metadata=_spec(
        "until", "RFC 3339 with a zone (Z or +01:00); the gate stops holding then",
        ValueKind.TIME))
    windows: tuple[Window, ...] = field(default=(), metadata=_spec(
        "windows", "recurring: the gate holds only inside a window", schema={
            "type": "array", "items": {
                "type": "object", "additionalProperties": False,
                "required": ["cron", "duration"],
                "properties": {
                    "cron": {"description": "standard 5-field cron", "type": "string"},
                    "duration": {"$ref": "gitgate-config.json#/$defs/duration"},
                    "timeZone": {"description": "IANA, default UTC", "type": "string"}}}}))
    approvals: tuple[Approval, ...] = field(default=(), metadata=_spec(
        "approve", "let one content of a held bundle through (its digest, from `gitgate plan`)",
        schema={"oneOf": [{"$ref": "#/$defs/approval"},
                          {"type": "array", "items": {"$ref": "#/$defs/approval"}}]}))
    paused_for: str | None = None  # the selector `gitgate pause` wrote this gate for
    # each reason given (spec.reason, then spec.reasons), bare
    reasons: tuple[str, ...] = field(default=(), metadata=_spec(
        "reasons", "later pauses of the same selector, each with who and when", schema={
            "type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["reason"],
                "properties": {"reason": {"type": "string", "pattern": "\\S"},
                               "by": {"type": "string"}, "at": {"$ref": "#/$defs/time"}}}}))
    # whom to ask about it: spec.owner, else who ran `gitgate pause`
    owner: str | None = field(default=None, metadata=_spec(
        "owner", "whom to ask about the gate (a team, a person, a channel)", ValueKind.TEXT))
    paused_at: datetime | None = None  # when `gitgate pause` wrote it (its annotation)


@dataclass(frozen=True)
class ShownGate:
    """A gate as every printer shows it: the `Gate`'s fields of these names, times (RFC 3339)
    and windows (`cron for 8h (UTC)`) as text. Each field is a key of the gate's document."""

    name: str = field(metadata=shown_key("name", {"type": "string"}, required=True))
    file: str = field(metadata=shown_key("file", {"type": "string"}, required=True))
    action: str = field(default="hold", metadata=shown_key(
        "action", {"enum": [str(a) for a in Action]}, required=True))
    reason: str = field(default="", metadata=shown_key("reason", {"type": "string"},
                                                     required=True))
    owner: str | None = field(default=None, metadata=shown_key(
        "owner", {"type": ["string", "null"]}))
    clusters: tuple[str, ...] = field(default=(), metadata=shown_key(
        "clusters", _TEXTS, "the member clusters it is about; empty: every one"))
    until: str | None = field(default=None, metadata=shown_key(
        "until", {"$ref": "#/$defs/time"}, required=True))
    windows: tuple[str, ...] = field(default=(), metadata=shown_key(
        "windows", _TEXTS, "its recurring windows, each as `CRON for DURATION (TIME ZONE)`"))


SPEC_FIELDS = tuple(f for f in fields(Gate) if "spec" in f.metadata)
SHOWN_FIELDS = tuple(f for f in fields(ShownGate) if "shown" in f.metadata)


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of each `spec` key of a gate file, in the order of the fields."""
    return {f.metadata["spec"]["key"]: f.metadata["spec"]["schema"] for f in SPEC_FIELDS}


@dataclass(frozen=True)
class InvalidGate:
    file: str
    message: str
    line: int | None = None
    within: tuple[str, ...] = ()  # folder globs of the bundles it holds (a tenant's); (): all
