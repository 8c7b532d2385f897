"""Decide, for every bundle, whether it is applied, held, suspended or failed, and why.
Pure: (bundles, gates, now) -> verdicts. The clock is a parameter."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from gitgate.bundle import deps
from gitgate.bundle.group import bundle_digest
from gitgate.bundle.tenancy import path_matches
from gitgate.gate.windows import gate_activity
from gitgate.memo import Memo, derive
from gitgate.model import (
    Action,
    Bundle,
    BundleVerdict,
    Gate,
    HoldReason,
    InvalidGate,
    ObjectRef,
    ReasonKind,
    Verdict,
    join,
)
from gitgate.source.discover import PAUSE_FILE

PAUSE_LABELS = ("gitgate.io/paused", "work.karmada.io/paused")


@dataclass(frozen=True)
class GateState:
    gate: Gate
    active: bool
    next_change: datetime | None
    covers: tuple[str, ...] = field(default_factory=tuple)
    since: datetime | None = None  # when it began to hold: the window's start, else the pause


def gate_covers(gate: Gate, bundle: Bundle) -> bool:
    """Name globs (a glob also covers the apps of a split source: `shop` covers `shop/carts`)
    or the label selector; either is enough."""
    return covers_name(gate, bundle.name, bundle.labels)


def covers_name(gate: Gate, name: str, labels: dict[str, str]) -> bool:
    for pattern in gate.bundles:
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + "/*"):
            return True
    return bool(gate.match_labels) and all(
        labels.get(k) == v for k, v in gate.match_labels.items())


def holds_bundle_at(bad: InvalidGate, source: str) -> bool:
    """Whether an unusable gate holds the bundle of the folder `source` ("": unknown, held)."""
    return not bad.within or not source or any(path_matches(source, p) for p in bad.within)


def gone_bundle_holds(name: str, labels: dict[str, str], states: Iterable[GateState],
                      invalid: Iterable[InvalidGate], source: str = "") -> list[HoldReason]:
    """Why a bundle that left Git must not be pruned yet: a gate that cannot be read, or an
    active gate (hold or suspend) that still covers its name or its last known labels.
    Deleting its objects would be a write to a held bundle."""
    reasons = [HoldReason(ReasonKind.INVALID_GATE, bad.file, bad.file,
                          f"gate file cannot be used ({bad.message})")
               for bad in invalid if holds_bundle_at(bad, source)]
    for state in states:
        gate = state.gate
        if state.active and covers_name(gate, name, labels):
            reasons.append(HoldReason(ReasonKind.GATE, gate.name, gate.file, gate.reason,
                                  gate.action, gate.until, gate.clusters))
    return reasons


def gate_states(gates: Iterable[Gate], bundles: list[Bundle], now: datetime) -> list[GateState]:
    states = []
    for gate in gates:
        activity = gate_activity(gate, now)
        covers = tuple(b.name for b in bundles if gate_covers(gate, b))
        states.append(GateState(gate, activity.active, activity.next_change, covers,
                                activity.since if activity.active else None))
    return states


def _label_reasons(bundle: Bundle) -> tuple[HoldReason, ...]:
    reasons = []
    for obj in bundle.objects:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for label in PAUSE_LABELS:
            if str(labels.get(label, "")).lower() == "true":
                ref = ObjectRef.of(obj)
                reasons.append(HoldReason(ReasonKind.LABEL, label, bundle.source.path,
                                      f"{ref} is labelled {label}: \"true\"", target=ref))
    return tuple(reasons)


def _earliest(times: Iterable[datetime | None]) -> datetime | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


def evaluate(bundles: list[Bundle], gates: list[Gate], invalid: list[InvalidGate],
             now: datetime, memo: Memo | None = None) -> dict[str, BundleVerdict]:
    """Each bundle's verdict at `now`. With a `memo`, a bundle object of the last pass keeps
    the pause labels found on its objects (they depend on its objects alone)."""
    states = gate_states(gates, bundles, now)
    verdicts: dict[str, BundleVerdict] = {}
    for bundle in bundles:
        digest = bundle.digest or bundle_digest(bundle.objects, bundle.source.options)
        if bundle.failed:
            reasons = tuple(HoldReason(ReasonKind.RENDER, p.reason, p.file or p.source, p.message,
                                       line=p.line) for p in bundle.problems)
            verdicts[bundle.name] = BundleVerdict(bundle.name, Verdict.FAILED, digest, reasons)
            continue
        holds: list[HoldReason] = []
        suspends: list[HoldReason] = []
        notes: list[HoldReason] = []
        changes: list[datetime | None] = []
        for bad in invalid:
            if not holds_bundle_at(bad, bundle.source.path):
                continue  # a tenant's misplaced gate holds that tenant's bundles alone
            which = "every bundle of its tenant" if bad.within else "every bundle"
            holds.append(HoldReason(ReasonKind.INVALID_GATE, bad.file, bad.file,
                                f"gate file cannot be used ({bad.message}); {which} is "
                                "held until it is fixed", line=bad.line))
        if bundle.source.pause_reason is not None:
            holds.append(HoldReason(ReasonKind.PAUSE_FILE, PAUSE_FILE,
                                join(bundle.source.pause_folder or bundle.source.path, PAUSE_FILE),
                                bundle.source.pause_reason))
        holds += derive(memo, "pause-labels", bundle, (), partial(_label_reasons, bundle))
        for state in states:
            if bundle.name not in state.covers:
                continue
            changes.append(state.next_change)
            if not state.active:
                continue
            gate = state.gate
            reason = HoldReason(ReasonKind.GATE, gate.name, gate.file, gate.reason, gate.action,
                            gate.until, gate.clusters)
            approved = any(a.bundle == bundle.name and a.digest == digest
                           for a in gate.approvals)
            if approved:
                notes.append(HoldReason(ReasonKind.APPROVED, gate.name, gate.file,
                                    f"digest {digest[:12]} approved through: {gate.reason}",
                                    gate.action, gate.until))
            elif gate.action is Action.HOLD:
                holds.append(reason)
            else:
                suspends.append(reason)
        next_change = _earliest(changes)
        if holds:
            verdict = Verdict.HELD
        elif suspends:
            verdict = Verdict.SUSPENDED
        else:
            verdict = Verdict.APPLY
        clusters: tuple[str, ...] | None = None
        if verdict is Verdict.SUSPENDED and all(r.clusters for r in suspends):
            clusters = tuple(sorted({c for r in suspends for c in r.clusters}))
        verdicts[bundle.name] = BundleVerdict(
            bundle.name, verdict, digest, tuple(holds + suspends + notes), next_change,
            suspend_clusters=clusters)
    return _with_dependency_holds(bundles, verdicts)


def _with_dependency_holds(bundles: list[Bundle],
                           verdicts: dict[str, BundleVerdict]) -> dict[str, BundleVerdict]:
    """A held workload holds what it uses, even when another bundle defines it; a held bundle
    holds the override policies, wherever they are committed, that act on it."""
    extra: dict[str, dict[ObjectRef, list[HoldReason]]] = {}
    held_bundles = [b for b in bundles if verdicts[b.name].verdict is Verdict.HELD]
    owner = {ref: b.name for b in bundles for ref in b.object_refs} if held_bundles else {}
    present = set(owner)
    for bundle in held_bundles:
        verdict = verdicts[bundle.name]
        why = verdict.reasons[0]
        for workload in (o for o in bundle.objects if deps.is_workload(o)):
            for ref in deps.dependency_refs(workload, present):
                other = owner.get(ref)
                if other is None or other == bundle.name:
                    continue
                if verdicts[other].verdict in (Verdict.HELD, Verdict.FAILED):
                    continue
                extra.setdefault(other, {}).setdefault(ref, []).append(HoldReason(
                    ReasonKind.DEPENDENCY, why.gate, why.file,
                    f"{ref} is used by {ObjectRef.of(workload)} of held bundle {bundle.name} "
                    f"({why.reason})", why.action, why.until, target=ref))
    _override_holds(bundles, verdicts, extra)
    out = dict(verdicts)
    for name, held in extra.items():
        base = verdicts[name]
        reasons = tuple(r for refs in held.values() for r in refs)
        out[name] = BundleVerdict(base.bundle, base.verdict, base.digest,
                                  base.reasons + reasons, base.next_change,
                                  tuple(sorted(held)), base.suspend_clusters)
    return out


def _override_holds(bundles: list[Bundle], verdicts: dict[str, BundleVerdict],
                    extra: dict[str, dict[ObjectRef, list[HoldReason]]]) -> None:
    """An override policy that acts on a held bundle is held with it (into `extra`)."""
    for bundle in bundles:
        if verdicts[bundle.name].verdict in (Verdict.HELD, Verdict.FAILED):
            continue
        for ref, targets in bundle.acts_on:
            for target in targets:
                held = verdicts.get(target)
                if held is None or held.verdict is not Verdict.HELD:
                    continue
                why = held.reasons[0]
                extra.setdefault(bundle.name, {}).setdefault(ref, []).append(HoldReason(
                    ReasonKind.DEPENDENCY, why.gate, why.file,
                    f"held with {target}: {ref} acts on the held bundle {target} "
                    f"({why.reason})", why.action, why.until, target=ref))
