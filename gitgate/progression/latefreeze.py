"""Freezes that reach a pass while it writes, and what a freeze selects a bundle by: each
bundle's `Identity` (its name, labels and folder now and as its record is live), the freeze
files of a newer commit (`NewerFreezes`, read from Git's objects), and `LateFreezes`, the
ones a pass checks before each write (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from gitgate.bundle.deps import dependency_refs, is_workload
from gitgate.errors import GitgateError
from gitgate.gate.evaluate import GateState, covers_name, gate_states, holds_bundle_at
from gitgate.gate.spec import parse_gates
from gitgate.model import (
    Gate,
    HoldReason,
    InvalidGate,
    ReasonKind,
    join,
)
from gitgate.plan import Plan
from gitgate.progression.frozenreach import LiveRecord
from gitgate.source.config import REPO_CONFIG, parse_repo_config
from gitgate.source.discover import PAUSE_FILE, pause_covering, pause_files
from gitgate.source.tree import RepoTree, gate_texts


@dataclass(frozen=True)
class Identity:
    """What a freeze may select a bundle by: its name, labels and folder now, those it is
    live under (its record), and the digest of its content (an approval lets that through)."""

    names: tuple[str, ...]
    labels: tuple[dict[str, str], ...]
    sources: tuple[str, ...]
    digest: str = ""



def identities(plan: Plan, records: Mapping[str, LiveRecord]) -> dict[str, Identity]:
    """Each bundle of the plan, and each record the plan does not have (a bundle that left
    Git, which a pass may prune), as a freeze selects it."""
    out: dict[str, Identity] = {}
    for item in plan.bundles:
        bundle = item.bundle
        record = records.get(bundle.name)
        names, labels, sources = [bundle.name], [dict(bundle.labels)], [bundle.source.path]
        if record is not None:
            labels.append(dict(record.labels))
            sources.append(record.source)
        out[bundle.name] = Identity(tuple(names), tuple(labels), tuple(sources),
                                    item.verdict.digest)
    for name, record in records.items():
        out.setdefault(name, Identity((name,), (dict(record.labels),), (record.source,)))
    return out



@dataclass(frozen=True)
class LateFreezes:
    """The freezes a newer commit adds while a pass is writing: its active gates that the
    pass's plan does not have (new or changed), its gate files that cannot be read (they
    hold everything), its `PAUSE` files the plan does not have. A bundle one of them covers
    gets nothing more written or pruned in that pass; the next pass judges the new commit
    whole (a suspension is then written first, as always)."""

    revision: str
    gates: tuple[GateState, ...] = ()
    invalid: tuple[InvalidGate, ...] = ()
    pauses: Mapping[str, str] = field(default_factory=dict)

    def stops(self, who: Identity) -> HoldReason | None:
        """Why nothing more of the bundle `who` may be written in this pass, or None."""
        for bad in self.invalid:
            if any(holds_bundle_at(bad, source) for source in who.sources):
                return HoldReason(ReasonKind.INVALID_GATE, bad.file, bad.file,
                                  f"gate file cannot be used ({bad.message})", line=bad.line)
        for source in who.sources:
            if (folder := pause_covering(source, self.pauses)) is not None:
                return HoldReason(ReasonKind.PAUSE_FILE, PAUSE_FILE, join(folder, PAUSE_FILE),
                                  self.pauses[folder])
        for state in self.gates:
            gate = state.gate
            if any(a.digest == who.digest and a.bundle in who.names for a in gate.approvals):
                continue
            if any(covers_name(gate, name, labels) for name in who.names
                   for labels in who.labels):
                return HoldReason(ReasonKind.GATE, gate.name, gate.file, gate.reason,
                                  gate.action, gate.until, gate.clusters)
        return None



@dataclass(frozen=True)
class NewerFreezes:
    """The freeze files of a commit newer than the one a pass is writing."""

    revision: str
    gates: tuple[Gate, ...] = ()
    invalid: tuple[InvalidGate, ...] = ()
    pauses: Mapping[str, str] = field(default_factory=dict)



def read_freezes(revision: str, tree: RepoTree) -> NewerFreezes:
    """A commit's freeze files from its tree: gitgate.yaml (for the gates folder), the gate
    files, the `PAUSE` files. A gitgate.yaml that cannot be read holds everything."""
    try:
        config = parse_repo_config(tree.read(REPO_CONFIG))
    except GitgateError as exc:
        return NewerFreezes(revision, (), (InvalidGate(REPO_CONFIG, exc.message),),
                            pause_files(tree))
    gates, invalid = parse_gates(gate_texts(tree, config.gates_path,
                                            configured=config.gates_path_configured))
    return NewerFreezes(revision, tuple(gates), tuple(invalid), pause_files(tree))



def merged(commits: list[NewerFreezes]) -> NewerFreezes:
    """The freezes of several newer commits as one, named after the newest: every gate,
    unreadable gate file and `PAUSE` any of them has (a freeze only narrows what a pass
    still writes, so none is dropped because a later commit lifted it)."""
    gates: list[Gate] = []
    invalid: list[InvalidGate] = []
    pauses: dict[str, str] = {}
    for commit in commits:
        gates += [g for g in commit.gates if g not in gates]
        invalid += [bad for bad in commit.invalid if bad not in invalid]
        pauses.update(commit.pauses)
    return NewerFreezes(commits[-1].revision, tuple(gates), tuple(invalid), pauses)



def late_freezes(newer: NewerFreezes, plan: Plan, now: datetime) -> LateFreezes:
    """What a newer commit freezes beyond what `plan` already holds, at `now`."""
    known = [state.gate for state in plan.gates]
    fresh = tuple(state for state in gate_states(
        [g for g in newer.gates if g not in known], [], now) if state.active)
    unread = tuple(bad for bad in newer.invalid if bad not in plan.invalid_gates)
    added = {folder: why for folder, why in newer.pauses.items() if folder not in plan.pauses}
    return LateFreezes(newer.revision, fresh, unread, added)



def stopped_with(plan: Plan) -> dict[str, tuple[str, ...]]:
    """For each bundle, the other bundles whose freeze stops it too: those its overrides act
    on, and those whose workloads use its objects (as the next pass would hold them)."""
    owner = {ref: item.bundle.name for item in plan.bundles for ref in item.bundle.object_refs}
    present = set(owner)
    out: dict[str, set[str]] = {}
    for item in plan.bundles:
        name = item.bundle.name
        for _, targets in item.bundle.acts_on:
            out.setdefault(name, set()).update(t for t in targets if t != name)
        for workload in (o for o in item.bundle.objects if is_workload(o)):
            for ref in dependency_refs(workload, present):
                if owner[ref] != name:
                    out.setdefault(owner[ref], set()).add(name)
    return {name: tuple(sorted(names)) for name, names in out.items()}
