"""A gate as gitgate uses it once its file is parsed and validated."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum


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


@dataclass(frozen=True)
class Gate:
    name: str
    file: str
    reason: str
    action: Action = Action.HOLD
    bundles: tuple[str, ...] = ()
    match_labels: dict[str, str] = field(default_factory=dict)
    clusters: tuple[str, ...] = ()
    until: datetime | None = None
    windows: tuple[Window, ...] = ()
    approvals: tuple[Approval, ...] = ()
    paused_for: str | None = None  # the selector `gitgate pause` wrote this gate for
    reasons: tuple[str, ...] = ()  # each reason given (spec.reason, then spec.reasons), bare
    owner: str | None = None  # whom to ask about it: spec.owner, else who ran `gitgate pause`
    paused_at: datetime | None = None  # when `gitgate pause` wrote it (its annotation)


@dataclass(frozen=True)
class InvalidGate:
    file: str
    message: str
    line: int | None = None
    within: tuple[str, ...] = ()  # folder globs of the bundles it holds (a tenant's); (): all
