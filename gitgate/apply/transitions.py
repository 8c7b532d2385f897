"""What changed for a bundle in a pass, as Kubernetes Events on its Bundle (pure): one event
per transition, none when a pass changes nothing. Applied (with the revision and what was
written), held (the gates and reasons), suspended by a gate, approved through a gate that
still holds anything newer, lifted, a rollout started, a wave released or halted, a hook
failed, objects pruned, a failure (its reason, with the file and line). A rollout's progress
within a wave (its waiting, its bake) is no transition. Notes say what the bundle's standing
says (`apply.standing`). Reasons come from the one `Reason` vocabulary."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gitgate.apply.inventory import Inventory
from gitgate.apply.recordedreason import RecordedReason
from gitgate.apply.standing import reasons_of, standing_of
from gitgate.errors import Reason
from gitgate.model import ReasonKind, Verdict

NORMAL, WARNING = "Normal", "Warning"


@dataclass(frozen=True)
class Transition:
    type: str  # Normal or Warning
    reason: str  # a Reason
    action: str  # what gitgate did: Apply, Hold, Suspend, Release, Halt, Prune, Fail
    note: str  # one line, for humans


def _gates(inventory: Inventory | None, *kinds: str) -> frozenset[tuple[str, ...]]:
    """The gates (and pauses, labels, invalid gate files) of a record, of the given kinds:
    what a hold or suspension is about, without the rollout's words that change each pass."""
    if inventory is None:
        return frozenset()
    return frozenset(_key(r) for r in reasons_of(inventory) if r.kind in kinds)


def _key(reason: RecordedReason) -> tuple[str, ...]:
    return (reason.kind, reason.gate, reason.file, reason.action, ",".join(reason.clusters),
            reason.reason if reason.kind != ReasonKind.ROLLOUT else "")


_HOLDS = tuple(str(k) for k in ReasonKind if k is not ReasonKind.APPROVED)


def _wave(record: str) -> tuple[int, str] | None:
    try:
        state = json.loads(record) if record else None
    except ValueError:
        return None
    if not isinstance(state, dict):
        return None
    return int(state.get("wave") or 0), str(state.get("halted") or "")


def transitions(previous: Inventory | None, now: Inventory, *, pruned: int = 0,
                failed_reason: str = "") -> list[Transition]:
    """The events of a bundle's pass: `previous` and `now` are its record before and after;
    `pruned`: objects this pass deleted; `failed_reason`: the pass's failure, if any."""
    out: list[Transition] = []
    before = previous.verdict if previous else ""
    if failed_reason:
        if before != Verdict.FAILED or (previous and previous.message != now.message):
            kind = Reason.HOOK_FAILED if failed_reason == Reason.HOOK_FAILED else failed_reason
            out.append(Transition(WARNING, kind, "Fail", now.message))
        return out
    meaning = standing_of(now)
    approved = _gates(now, ReasonKind.APPROVED)
    if approved and approved != _gates(previous, ReasonKind.APPROVED) \
            and now.verdict != Verdict.HELD:
        out.append(Transition(NORMAL, Reason.APPROVED, "Approve", meaning.line()))
    elif before == Verdict.HELD and now.verdict != Verdict.HELD:
        out.append(Transition(NORMAL, Reason.LIFTED, "Lift",
                              f"no longer held: {meaning.line()}"))
    holds = _gates(now, *_HOLDS)
    if now.verdict == Verdict.HELD and (before != Verdict.HELD
                                        or holds != _gates(previous, *_HOLDS)):
        out.append(Transition(NORMAL, Reason.HELD, "Hold", meaning.line()))
    gated = {g for g in holds if g[0] != ReasonKind.ROLLOUT}
    was_gated = {g for g in _gates(previous, *_HOLDS) if g[0] != ReasonKind.ROLLOUT} \
        if before == Verdict.SUSPENDED else set()
    if now.verdict == Verdict.SUSPENDED and gated and gated != was_gated:
        out.append(Transition(NORMAL, Reason.SUSPENDED, "Suspend", meaning.line()))
    live_before = (previous.applied_revision, previous.applied_digest) if previous else ("", "")
    if (now.applied_revision, now.applied_digest) != live_before and now.applied_digest:
        behind = ", ".join(c for c, _ in now.clusters_behind)
        out.append(Transition(NORMAL, Reason.APPLIED, "Apply",
                              f"revision {now.applied_revision[:12] or 'unknown'} applied "
                              f"({len(now.entries)} objects)"
                              + (f"; not yet on {behind} ({meaning.rollout or 'suspended'})"
                                 if behind else "")))
    wave_before = _wave(previous.progression.rollout) if previous else None
    wave_now = _wave(now.progression.rollout)
    if wave_now is not None:
        number, halted = wave_now
        if halted and (wave_before is None or not wave_before[1]):
            out.append(Transition(WARNING, Reason.ROLLOUT_HALTED, "Halt", meaning.line()))
        elif not halted and wave_before is not None and number > wave_before[0]:
            out.append(Transition(NORMAL, Reason.WAVE_RELEASED, "Release",
                                  f"rollout: wave {number} is healthy and baked; the clusters "
                                  "after it are released"))
    if pruned:
        out.append(Transition(NORMAL, Reason.PRUNED, "Prune",
                              f"{pruned} object(s) that left Git deleted"))
    return out
