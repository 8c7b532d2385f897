"""What changed for a bundle in a pass, as Kubernetes Events on its Bundle (pure): one event
per transition, none when a pass changes nothing. Applied (with the revision and what was
written), held (the gates and reasons), suspended, a rollout wave released or halted, a hook
failed, objects pruned, a failure (its reason, with the file and line). Reasons come from the
one `Reason` vocabulary."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gitgate.apply.inventory import Inventory
from gitgate.errors import Reason
from gitgate.model import Verdict

NORMAL, WARNING = "Normal", "Warning"


@dataclass(frozen=True)
class Transition:
    type: str  # Normal or Warning
    reason: str  # a Reason
    action: str  # what gitgate did: Apply, Hold, Suspend, Release, Halt, Prune, Fail
    note: str  # one line, for humans


def _reasons_said(inventory: Inventory) -> str:
    said = []
    for r in inventory.reasons:
        where = f" ({r.get('file')}{':' + str(r['line']) if r.get('line') else ''})" \
            if r.get("file") else ""
        said.append(f"{r.get('gate')}{where}: {r.get('reason')}")
    return "; ".join(said) or inventory.message


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
    if before == Verdict.HELD and now.verdict != Verdict.HELD:
        out.append(Transition(NORMAL, Reason.LIFTED, "Lift",
                              f"no longer held; verdict {now.verdict}"))
    if now.verdict == Verdict.HELD and (before != Verdict.HELD or previous is None
                                        or previous.reasons != now.reasons):
        out.append(Transition(NORMAL, Reason.HELD, "Hold", f"held: {_reasons_said(now)}"))
    if now.verdict == Verdict.SUSPENDED and (before != Verdict.SUSPENDED or previous is None
                                             or previous.reasons != now.reasons):
        out.append(Transition(NORMAL, Reason.SUSPENDED, "Suspend",
                              f"dispatch suspended: {_reasons_said(now)}"))
    live_before = (previous.applied_revision, previous.applied_digest) if previous else ("", "")
    if (now.applied_revision, now.applied_digest) != live_before and now.applied_digest:
        behind = ", ".join(c for c, _ in now.clusters_behind)
        out.append(Transition(NORMAL, Reason.APPLIED, "Apply",
                              f"revision {now.applied_revision[:12] or 'unknown'} applied "
                              f"({len(now.entries)} objects)"
                              + (f"; not yet on {behind} (suspended)" if behind else "")))
    wave_before = _wave(previous.progression.rollout) if previous else None
    wave_now = _wave(now.progression.rollout)
    if wave_now is not None:
        number, halted = wave_now
        if halted and (wave_before is None or not wave_before[1]):
            out.append(Transition(WARNING, Reason.ROLLOUT_HALTED, "Halt",
                                  f"rollout halted at wave {number + 1}: {halted}"))
        elif not halted and wave_before is not None and number > wave_before[0]:
            out.append(Transition(NORMAL, Reason.WAVE_RELEASED, "Release",
                                  f"rollout: wave {number} is healthy and baked; the clusters "
                                  "after it are released"))
    if pruned:
        out.append(Transition(NORMAL, Reason.PRUNED, "Prune",
                              f"{pruned} object(s) that left Git deleted"))
    return out
