"""What `gitgate resume SELECTOR` changes, decided from the plan's gates (pure).

Resume lifts only what the user means. A gate named SELECTOR is removed. Otherwise, of the
gates now holding a selected bundle: one `gitgate pause` wrote for exactly SELECTOR, or one that
covers nothing but selected bundles (and has no recurring window), is removed; one that lists a
selected bundle by name among others is narrowed (those names leave its list); any other (a
glob or labels that also cover other bundles, a recurring freeze) is refused by name, and then
nothing changes: the bundle would stay held anyway."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gitgate.gate.evaluate import GateState, gate_covers
from gitgate.gitops.gatefile import written_for
from gitgate.model import Bundle


@dataclass(frozen=True)
class GateEdit:
    file: str
    gate: str
    remove_bundles: tuple[str, ...] = ()  # narrow: these names leave spec.bundles; () deletes

    @property
    def deletes(self) -> bool:
        return not self.remove_bundles

    def describe(self) -> str:
        if self.deletes:
            return f"remove gate {self.gate} ({self.file})"
        return (f"narrow gate {self.gate} ({self.file}): {', '.join(self.remove_bundles)} "
                "leave its bundles")


@dataclass(frozen=True)
class Refusal:
    file: str
    gate: str
    why: str

    def describe(self) -> str:
        return (f"{self.file}: gate {self.gate} {self.why}; lift it whole with `gitgate resume "
                f"{self.gate}`, or edit it")


def resume_edits(selector: str, gates: tuple[GateState, ...], selected: list[Bundle]
                 ) -> tuple[list[GateEdit], list[Refusal]]:
    named = [s for s in gates if s.gate.name == selector]
    if named:
        return [GateEdit(s.gate.file, s.gate.name) for s in named], []
    chosen = {b.name for b in selected}
    edits: list[GateEdit] = []
    refusals: list[Refusal] = []
    for state in gates:
        gate = state.gate
        holding = sorted(chosen & set(state.covers))
        if not state.active or not holding:
            continue
        others = sorted(set(state.covers) - chosen)
        if written_for(gate, selector) or (not others and not gate.windows):
            edits.append(GateEdit(gate.file, gate.name))
            continue
        if gate.windows:
            refusals.append(Refusal(gate.file, gate.name,
                                    "is a recurring freeze (windows) that also covers "
                                    + _listed(others)))
            continue
        narrowed = replace(gate, bundles=tuple(b for b in gate.bundles if b not in holding))
        still = [b.name for b in selected if b.name in holding and gate_covers(narrowed, b)]
        if still or not narrowed.bundles and not narrowed.match_labels:
            refusals.append(Refusal(gate.file, gate.name,
                                    f"covers {', '.join(holding)} through a glob or labels "
                                    f"that also cover {_listed(others)}"))
        else:
            edits.append(GateEdit(gate.file, gate.name, tuple(holding)))
    return edits, refusals


def _listed(names: list[str]) -> str:
    return ", ".join(names) if names else "other bundles"
