"""What a bundle's state means, worked out once and said the same way everywhere: its verdict,
a one-line message with every reason (file and line as the repo has them), the gates in force
(a gate an approval lets this content through included: it still holds anything newer), the
rollout's step, and the commands that change it. `status` (table, JSON, YAML), `get`,
`describe`, the Bundle's conditions and events, the loop's `/status`, the web page and `plan`
all render a `Standing`; none words a verdict of its own. Pure: a record (or a plan's
verdict) in, a `Standing` out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitgate.apply.inventory import DEFAULT_INSTANCE, Inventory
from gitgate.apply.recordedreason import RecordedReason
from gitgate.karmada.waves import RolloutState
from gitgate.model import ReasonKind, Verdict
from gitgate.plan import BundlePlan

APPLIED_NOTE = "the gate still holds anything newer"


def reasons_of(record: Inventory) -> tuple[RecordedReason, ...]:
    return record.reasons


@dataclass(frozen=True)
class GateInForce:
    """A gate that covers the bundle now: holding or suspending it, or letting its current
    content through (`approved`) while it holds anything newer."""

    gate: str
    where: str  # `gates/freeze.yaml`, with `:line` when known
    action: str  # hold or suspend
    reason: str
    approved: bool = False
    clusters: tuple[str, ...] = ()
    until: str | None = None

    def said(self) -> str:
        if self.approved:
            return f"approved through gate {self.gate} ({self.where}); {APPLIED_NOTE}"
        verb = "suspended" if self.action == "suspend" else "held"
        on = f" on {', '.join(self.clusters)}" if self.clusters else ""
        until = f" until {self.until}" if self.until else ""
        return f"{verb}{on} by gate {self.gate} ({self.where}){until}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {"gate": self.gate, "where": self.where, "action": self.action,
                "reason": self.reason, "approved": self.approved,
                "clusters": list(self.clusters), "until": self.until}


@dataclass(frozen=True)
class Standing:
    verdict: str
    message: str  # one line: what the state is and why (every reason, with its file:line)
    gates: tuple[GateInForce, ...] = ()
    rollout: str = ""  # the rollout's step ("" without a rollout)
    commands: tuple[str, ...] = ()  # what changes it, each `command (what it does)`
    reasons: tuple[RecordedReason, ...] = ()  # every reason, as recorded

    @property
    def next(self) -> str:
        return "; or ".join(self.commands)

    def line(self) -> str:
        """The message, then what changes it: the one line tables and pages show."""
        return self.message + (f"; next: {self.next}" if self.commands else "")

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "gatesInForce": [g.as_dict() for g in self.gates],
                "rolloutStep": self.rollout or None,
                "next": list(self.commands)}


def _gate(reason: RecordedReason) -> GateInForce:
    approved = reason.kind == ReasonKind.APPROVED
    text = reason.reason
    if approved and ": " in text:
        text = text.split(": ", 1)[1]  # `digest abc approved through: INC-1` -> the gate's
    return GateInForce(reason.gate, reason.where(), reason.action, text, approved,
                       reason.clusters, reason.until)


def _rollout_step(reason: RecordedReason, state: RolloutState | None) -> str:
    """The rollout's step as one phrase: `rolling out wave 1 of 2 [member1]: …`, `rollout
    halted at wave 1 of 2 [member1]: …`, `rolled out`, with where `rollout:` is written."""
    text, where = reason.reason, reason.where()
    if text.startswith("rolled out"):
        return text
    if text.endswith("stopped by a gate"):
        return f"rollout at {text}" + (f" ({where})" if where else "")
    if text.startswith("halted") or (state is not None and state.halted):
        said = f"rollout {text}" if text.startswith("halted") else f"rollout halted: {text}"
    else:
        said = f"rolling out {text}"
    return said + (f" ({where})" if where else "")


def standing(bundle: str, verdict: str, reasons: Sequence[RecordedReason], outcome: str,
             rollout: RolloutState | None = None, *, instance: str = DEFAULT_INSTANCE
             ) -> Standing:
    """The meaning of a bundle's state. `reasons`: as recorded; `outcome`: what the last
    pass said ("Applied", a failure; "" for a plan); `rollout`: its rollout's recorded
    state."""
    gates = tuple(_gate(r) for r in reasons if r.kind in (ReasonKind.GATE, ReasonKind.APPROVED))
    step = next((_rollout_step(r, rollout) for r in reasons
                 if r.kind == ReasonKind.ROLLOUT and r.gate == "rollout"
                 and r.action == "suspend"), "")
    others = [r for r in reasons if r.kind not in (ReasonKind.GATE, ReasonKind.APPROVED)
              and not (r.kind == ReasonKind.ROLLOUT and r.action == "suspend")]
    holding = [g for g in gates if not g.approved]
    approved = [g for g in gates if g.approved]
    parts: list[str] = []
    commands: list[str] = []
    if verdict == Verdict.FAILED:
        parts.append(outcome or "; ".join(f"{r.where()}: {r.reason}" for r in others))
        commands += [f"fix {r.where()} and commit" for r in others
                     if r.kind == ReasonKind.RENDER and r.file][:1]
    else:
        parts += [g.said() for g in holding]
        parts += [_other(r) for r in others]
        if outcome and verdict not in (Verdict.HELD, Verdict.SUSPENDED, Verdict.HALTED):
            parts.insert(0, outcome)
        if step and step != "rolled out":
            parts.append(step)
        parts += [g.said() for g in approved if verdict != Verdict.HELD or not holding]
        commands += _commands(bundle, verdict, holding, others, rollout, instance)
        commands += [f"gitgate resume {g.gate} (lifts the gate for anything newer)"
                     for g in approved if verdict == Verdict.APPLY]
    message = "; ".join(p for p in dict.fromkeys(parts) if p)
    if not message and verdict == Verdict.SUSPENDED:
        message = "suspended"
    return Standing(verdict, message, gates, step, tuple(dict.fromkeys(commands)),
                    tuple(reasons))


def _other(reason: RecordedReason) -> str:
    kind, where, why = reason.kind, reason.where(), reason.reason
    if kind == ReasonKind.PAUSE_FILE:
        return f"held by {where}: {why}"
    if kind == ReasonKind.INVALID_GATE:
        return f"held: {where}: {why}"
    return f"held: {why} ({where})" if where else f"held: {why}"


def _commands(bundle: str, verdict: str, holding: list[GateInForce],
              others: list[RecordedReason], rollout: RolloutState | None,
              instance: str) -> list[str]:
    out: list[str] = []
    for gate in holding:
        lifts = "lifts the gate" if gate.action == "hold" else "ends the suspension"
        out.append(f"gitgate resume {gate.gate} ({lifts})")
    for reason in others:
        kind, where = reason.kind, reason.where()
        if kind == ReasonKind.PAUSE_FILE:
            out.append(f"git rm {reason.file} and commit (removes the pause)")
        elif kind == ReasonKind.INVALID_GATE:
            out.append(f"fix {where} and commit")
        elif kind == ReasonKind.LABEL:
            out.append(f"remove the label {reason.gate} in {where} and commit")
    if verdict == Verdict.HELD and holding:
        out.append(f"gitgate approve {bundle} (lets this content through)")
    if verdict == Verdict.HALTED and rollout is not None:
        flags = "" if instance == DEFAULT_INSTANCE else f" --instance {instance}"
        out.append(f"gitgate resume {bundle} --kubeconfig <karmada kubeconfig>{flags} "
                   f"(retries wave {rollout.wave + 1})")
    return out


def standing_of(record: Inventory) -> Standing:
    """A record's standing."""
    return standing(record.bundle, record.verdict, reasons_of(record), record.message,
                    RolloutState.from_json(record.progression.rollout),
                    instance=record.instance)


def planned_standing(item: BundlePlan, instance: str = DEFAULT_INSTANCE) -> Standing:
    """What a plan's verdict for a bundle means (`plan` shows it before anything is
    written)."""
    verdict = item.verdict
    return standing(verdict.bundle, str(verdict.verdict),
                    [RecordedReason.of_hold(r) for r in verdict.reasons], "",
                    item.rollout.state if item.rollout is not None else None,
                    instance=instance)
