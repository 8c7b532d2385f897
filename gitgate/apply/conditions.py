"""A Bundle's conditions, worked out from its record (pure). The meanings follow the
conventions kstatus reads (`Ready`, and the abnormal-true `Reconciling` and `Stalled`),
with gitgate's own `Held`, `Suspended` and `Progressing`:

- `Ready`: True when the last pass applied the bundle everywhere it goes (verdict apply);
  otherwise False, with the reason that keeps it from being so (`Held`, `Suspended`,
  `RolloutHalted`, the failure's own reason such as `ApplyFailed`, or `Progressing`).
- `Held`: True while a gate or pause holds the bundle (nothing of it is written); False with
  the reason `Approved` while an approval lets its current content through a gate that still
  holds anything newer.
- `Suspended`: True while dispatch to some member clusters is suspended (a gate with
  `action: suspend`, or clusters a rollout has not released yet).
- `Progressing` (and `Reconciling`, its kstatus name): True while a rollout is between waves
  or a sync waits for hooks.
- `Stalled`: True when it cannot go on by itself: a failure, or a halted rollout.

Each condition's message is the bundle's standing (`apply.standing`): the same words as
`status`, the page and the events. A condition keeps its `lastTransitionTime` while its
status stays the same."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypedDict

from gitgate.errors import Condition, Reason
from gitgate.model import Verdict


class BundleCondition(TypedDict):
    """One condition of a Bundle, as its status has it."""

    type: str
    status: str  # True, False or Unknown
    reason: str
    message: str
    lastTransitionTime: str  # RFC 3339 ("" when not known)


def read_condition(recorded: Mapping[str, Any]) -> BundleCondition:
    """A condition as a Bundle's status has it (a value it lacks: "")."""
    return BundleCondition(
        type=str(recorded.get("type") or ""), status=str(recorded.get("status") or ""),
        reason=str(recorded.get("reason") or ""), message=str(recorded.get("message") or ""),
        lastTransitionTime=str(recorded.get("lastTransitionTime") or ""))


class Record(Protocol):
    @property
    def verdict(self) -> str: ...
    @property
    def message(self) -> str: ...


def _reason_of(message: str, fallback: str) -> str:
    """The reason a record's message starts with (`ApplyFailed: ...`), else `fallback`."""
    head = message.split(":", 1)[0].strip()
    return head if head.isalnum() and head[:1].isupper() else fallback


def states(record: Record, rolling: bool = False, approved: bool = False
           ) -> dict[str, tuple[str, str]]:
    """Each condition's (status, reason) for a record; `rolling`: a rollout is between
    waves (its later clusters not released yet); `approved`: an approval lets its content
    through a gate."""
    verdict = record.verdict
    syncing = record.message.startswith("syncing:")
    progressing = rolling or syncing
    stalled = verdict in (Verdict.FAILED, Verdict.HALTED)
    if verdict == Verdict.APPLY and not progressing:
        ready = ("True", str(Reason.APPLIED))
    elif verdict == Verdict.FAILED:
        ready = ("False", _reason_of(record.message, Reason.FAILED))
    elif verdict == Verdict.HALTED:
        ready = ("False", str(Reason.ROLLOUT_HALTED))
    elif verdict == Verdict.HELD:
        ready = ("False", str(Reason.HELD))
    elif verdict == Verdict.SUSPENDED and not progressing:
        ready = ("False", str(Reason.SUSPENDED))
    elif progressing:
        ready = ("False", str(Reason.PROGRESSING))
    else:
        ready = ("Unknown", "Pending")
    moving = ("True", "RolloutInProgress" if rolling else "HooksRunning") if progressing \
        else ("False", "Idle")
    return {
        Condition.READY: ready,
        Condition.HELD: ("True", str(Reason.HELD)) if verdict == Verdict.HELD
        else ("False", str(Reason.APPROVED)) if approved else ("False", "NotHeld"),
        Condition.SUSPENDED: ("True", str(Reason.SUSPENDED)) if verdict == Verdict.SUSPENDED
        else ("False", "NotSuspended"),
        Condition.PROGRESSING: moving, Condition.RECONCILING: moving,
        Condition.STALLED: ("True", ready[1]) if stalled else ("False", "NotStalled"),
    }


def conditions_for(record: Record, previous: Iterable[BundleCondition], now: str,
                   rolling: bool = False, said: str | None = None, approved: bool = False
                   ) -> tuple[BundleCondition, ...]:
    """The conditions, each with `said` (the bundle's standing; the record's message when
    not given), keeping the previous transition time of a condition whose status did not
    change."""
    before = {c["type"]: c for c in previous}
    message = record.message if said is None else said
    out = []
    for kind, (status, reason) in states(record, rolling, approved).items():
        old = before.get(kind)
        since = old["lastTransitionTime"] or now if old and old["status"] == status else now
        out.append(BundleCondition(
            type=str(kind), status=status, reason=reason,
            message=message if status == "True" or kind == Condition.READY
            or reason == Reason.APPROVED else "",
            lastTransitionTime=since))
    return tuple(out)
