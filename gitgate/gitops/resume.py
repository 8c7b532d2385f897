"""What `gitgate resume SELECTOR` changes, decided from the plan's gates (pure).

Resume lifts only what was named on the command line. A gate named SELECTOR is removed.
Otherwise the gates `gitgate pause SELECTOR` wrote (exactly that selector) are removed. Every
other active gate that holds a selected bundle (a team's freeze, a blue/green suspension, a
recurring window, another pause) is left as it is and named, with the command that lifts it:
a resume never removes or narrows a gate it was not told about."""

from __future__ import annotations

from dataclasses import dataclass

from gitgate.gate.evaluate import GateState
from gitgate.gitops.gatefile import written_for
from gitgate.model import Action, Bundle


@dataclass(frozen=True)
class GateEdit:
    file: str
    gate: str
    remove_bundles: tuple[str, ...] = ()  # narrow: these names leave spec.bundles; () deletes
    reason: str = ""  # every reason the gate holds for, so a resume says what it lifts

    @property
    def deletes(self) -> bool:
        return not self.remove_bundles

    def describe(self) -> str:
        if self.deletes:
            lifts = f": lifts {self.reason}" if self.reason else ""
            return f"remove gate {self.gate} ({self.file}){lifts}"
        return (f"narrow gate {self.gate} ({self.file}): {', '.join(self.remove_bundles)} "
                "leave its bundles")


@dataclass(frozen=True)
class Refusal:
    file: str
    gate: str
    why: str

    def describe(self) -> str:
        return (f"{self.file}: gate {self.gate} {self.why}; it is left as it is: "
                f"`gitgate resume {self.gate}` lifts it")


def resume_edits(selector: str, gates: tuple[GateState, ...], selected: list[Bundle]
                 ) -> tuple[list[GateEdit], list[Refusal]]:
    """The gates to remove, and the other active gates that still hold a selected bundle."""
    named = [s for s in gates if s.gate.name == selector]
    if named:
        return [GateEdit(s.gate.file, s.gate.name, reason=s.gate.reason) for s in named], []
    chosen = {b.name for b in selected}
    edits: list[GateEdit] = []
    refusals: list[Refusal] = []
    for state in gates:
        gate = state.gate
        holding = sorted(chosen & set(state.covers))
        if not state.active or not holding:
            continue
        if written_for(gate, selector):
            edits.append(GateEdit(gate.file, gate.name, reason=gate.reason))
        elif gate.windows:
            refusals.append(Refusal(gate.file, gate.name,
                                    f"is a recurring freeze (windows) that holds "
                                    f"{', '.join(holding)}"))
        else:
            refusals.append(Refusal(gate.file, gate.name,
                                    f"{'suspends' if gate.action is Action.SUSPEND else 'holds'}"
                                    f" {', '.join(holding)} and was not written by `gitgate "
                                    f"pause {selector}`"))
    return edits, refusals
