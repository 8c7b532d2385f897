"""A freeze binds to what is live. A gate, a `PAUSE` file or a pause label holds a bundle as
the commit names it, and also as its Bundle record says it is live: the name, labels and
folder it was last applied under, and every object its inventory holds. So a commit that
renames the bundle, drops its label, moves or empties its folder, or lets a parent
kustomization take it in changes nothing live while the freeze stands:

- a bundle whose record (same name) a freeze covers is held or suspended with that freeze,
  whatever its current labels or folder;
- every object live in a frozen bundle's inventory, and every object a held bundle claims now,
  is frozen: another bundle that would write or prune one fails (`Frozen`), naming the
  object, the freeze and the bundle that holds it;
- a bundle that left Git is not pruned while a freeze covers its record, while a held bundle
  claims its objects now, or while a bundle that failed still has them in Git.

A freeze is also checked at each write: a newer commit that adds or widens one while a pass
is writing stops the writes and prunes of what it covers in that pass (`LateFreezes`).

Pure: (plan, the records, the repo's `PAUSE` files) -> the plan this pass applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from gitgate.bundle.deps import dependency_refs, is_workload
from gitgate.errors import Reason
from gitgate.gate.evaluate import GateState, covers_name, holds_bundle_at
from gitgate.model import (
    Action,
    BundleVerdict,
    Gate,
    HoldReason,
    InvalidGate,
    ObjectRef,
    ReasonKind,
    Verdict,
    join,
)
from gitgate.plan import BundlePlan, FrozenLive, Plan, bundle_plan
from gitgate.progression.frozenreach import (
    Around,
    Freeze,
    LiveRecord,
    acted_on,
    acting_on_live,
    frozen_live_objects,
    frozen_write_text,
    stopped_bundles,
    suspended_bundles,
    used_live,
)
from gitgate.source.discover import PAUSE_FILE, bundle_name_for, pause_covering

FROZEN_VERDICTS = (Verdict.HELD, Verdict.SUSPENDED)


def record_holds(record: LiveRecord, gates: Iterable[GateState],
                 invalid: Iterable[InvalidGate], pauses: Mapping[str, str]
                 ) -> list[HoldReason]:
    """The freezes that cover a bundle as it is live: an active gate (hold or suspend) that
    selects its recorded name or labels, a `PAUSE` file in its recorded folder or in the
    folder its name comes from (a record's folder can be edited, its name is its key), a
    gate file that cannot be read and holds that folder."""
    name, labels, source = record.bundle, dict(record.labels), record.source
    reasons = [HoldReason(ReasonKind.INVALID_GATE, bad.file, bad.file,
                          f"gate file cannot be used ({bad.message})", line=bad.line)
               for bad in invalid if holds_bundle_at(bad, source)]
    named = sorted(folder for folder in pauses
                   if folder != source and bundle_name_for(folder) == name.split("/", 1)[0])
    covering = pause_covering(source, pauses) if source else None
    for folder in [covering, *(f for f in named if f != covering)] if covering else named:
        reasons.append(HoldReason(ReasonKind.PAUSE_FILE, PAUSE_FILE, join(folder, PAUSE_FILE),
                                  f"{pauses[folder]} (folder {folder}, where the bundle is live "
                                  "from)"))
    for state in gates:
        gate = state.gate
        if state.active and covers_name(gate, name, labels):
            reasons.append(HoldReason(ReasonKind.GATE, gate.name, gate.file,
                                      f"{gate.reason} (covers the bundle as it is live: "
                                      f"{_identity(gate, name, labels)})",
                                      gate.action, gate.until, gate.clusters))
    return reasons


def _identity(gate: Gate, name: str, labels: dict[str, str]) -> str:
    """What of a bundle's live identity a gate selects, in a few words."""
    matched = gate.match_labels
    if matched and all(labels.get(k) == v for k, v in matched.items()):
        return "labels " + ",".join(f"{k}={v}" for k, v in sorted(matched.items()))
    return f"name {name}"


def with_live_freezes(plan: Plan, records: Mapping[str, LiveRecord],
                      pauses: Mapping[str, str]) -> Plan:
    """The plan with every freeze bound to what is live (see the module's doc)."""
    # a gate's approval of a bundle's current content lets it through as it is live too:
    # what it has live is not frozen against the bundles that take it over
    approved = {item.bundle.name: {r.gate for r in item.verdict.reasons
                                   if r.kind is ReasonKind.APPROVED} for item in plan.bundles}
    holds = {name: kept for name, record in records.items()
             if (kept := [r for r in record_holds(record, plan.gates, plan.invalid_gates,
                                                  pauses)
                          if r.gate not in approved.get(name, ())])}
    outside = list(plan.outside)  # out of this pass's scope, but in Git and frozen
    if not holds and not outside and not any(
            b.verdict.verdict in FROZEN_VERDICTS for b in plan.bundles):
        return plan
    items = [_same_bundle(item, holds.get(item.bundle.name, ())) for item in plan.bundles]
    frozen = _frozen_objects(items + outside, records, holds)
    items = [_refused(item, records.get(item.bundle.name), frozen) for item in items]
    stopped = stopped_bundles(items + outside, records, holds)
    frozen_live = frozen_live_objects(stopped, records)
    stilled = {**suspended_bundles(items + outside, records, holds), **stopped}
    # what acts on a bundle suspended as it is live that writes nothing (failed, or left
    # Git) stays as it is too: no pass confirms that bundle's suspension
    writing = {item.bundle.name for item in items + outside
               if item.verdict.verdict is not Verdict.FAILED}
    unwritten = {**{n: why for n, why in stilled.items() if n not in writing}, **stopped}
    acted = (frozen_live_objects(unwritten, records) if len(unwritten) > len(stopped)
             else frozen_live)
    around, containers = _around(items + outside, records, frozen, unwritten, acted,
                                 stilled)
    items = [_kept_around(item, records.get(item.bundle.name), around, containers)
             for item in items]
    current = {item.bundle.name for item in items + outside} | set(plan.elsewhere)
    live_holds = {name: tuple(found) for name, found in holds.items() if name not in current}
    for name, record in records.items():
        if name in current:
            continue
        claimed = _claimed_elsewhere(name, record, items, frozen) or [
            replace(freeze.why, reason=f"{ref} {freeze.why.reason}")
            for ref in record.by_ref()
            if (freeze := _other(around.get(ref) or containers.get(ref), name))][:1]
        if claimed:
            live_holds[name] = (*live_holds.get(name, ()), *claimed)
    return replace(plan, bundles=tuple(items), live_holds=live_holds, frozen_live=frozen_live,
                   frozen_bundles=_frozen_bundles(items + outside, holds))


def _around(items: list[BundlePlan], records: Mapping[str, LiveRecord],
            frozen: Mapping[ObjectRef, list[Freeze]], stopped: Mapping[str, HoldReason],
            frozen_live: tuple[FrozenLive, ...], stilled: Mapping[str, HoldReason],
            ) -> tuple[Around, Around]:
    """What must stay as it is around what is frozen, whichever bundle has it: what a held
    or suspended (`stilled`) workload uses (its ConfigMaps, Secrets, PVCs, ServiceAccounts;
    their templates go to the suspended clusters too), as the commit renders it
    and as its record says it is live, and a Karmada policy acting on a frozen bundle, judged
    against its objects as rendered and as live; and, not deleted, the Namespaces and CRDs
    frozen objects live in (deleting one deletes them). Each with the bundle it stays for
    and why."""
    out: Around = {}
    containers: Around = {}
    present = {ref for item in items for ref in item.bundle.object_refs}
    present.update(ref for record in records.values() for ref in record.by_ref())
    used_live(stilled, records, present, out)
    acting_on_live(items, frozen_live, out)
    acted_on(items, records, stopped, frozen_live, out)
    for item in items:
        why = stilled.get(item.bundle.name)
        if why is None:
            continue
        for workload in (o for o in item.bundle.objects if is_workload(o)):
            for ref in dependency_refs(workload, present):
                out.setdefault(ref, []).append(Freeze(item.bundle.name, replace(
                    why, reason=f"is used by {ObjectRef.of(workload)} of frozen bundle "
                                f"{item.bundle.name} ({why.reason})")))
    for item in items:
        for ref, targets in item.bundle.acts_on:
            for target in targets:
                if target in stopped and target != item.bundle.name:
                    out.setdefault(ref, []).append(Freeze(target, replace(
                        stopped[target], reason=f"acts on frozen bundle {target} "
                                                f"({stopped[target].reason})")))
    namespaces = {ref.namespace: found[0] for ref, found in frozen.items() if ref.namespace}
    groups = {ref.group: found[0] for ref, found in frozen.items() if ref.group}
    for ref in present:
        if ref.kind == "Namespace" and not ref.group and ref.name in namespaces:
            freeze = namespaces[ref.name]
            what = f"holds frozen objects of bundle {freeze.holder}"
        elif ref.kind == "CustomResourceDefinition" and (group := next(
                (g for g in groups if ref.name.endswith("." + g)), None)) is not None:
            freeze = groups[group]
            what = f"defines frozen objects of bundle {freeze.holder}"
        else:
            continue
        containers.setdefault(ref, []).append(Freeze(freeze.holder, replace(
            freeze.why, reason=f"{what} ({freeze.why.reason})")))
    return out, containers


def _kept_around(item: BundlePlan, record: LiveRecord | None, around: Around,
                 containers: Around) -> BundlePlan:
    """An open bundle neither writes nor prunes what stays around what is frozen, nor
    prunes a container of frozen objects (the rest of it goes out)."""
    if not (around or containers) or item.verdict.verdict not in (Verdict.APPLY,
                                                                   Verdict.SUSPENDED):
        return item
    name = item.bundle.name
    recorded = tuple(record.by_ref()) if record is not None else ()
    wanted = set(item.bundle.object_refs)
    kept = {ref: freeze for ref in (*wanted, *recorded)
            if (freeze := _other(around.get(ref), name))}
    kept.update({ref: freeze for ref in recorded if ref not in wanted
                 and (freeze := _other(containers.get(ref), name))})
    new = {ref: f for ref, f in kept.items() if ref not in item.verdict.held_objects}
    if not new:
        return item
    verdict = item.verdict
    reasons = tuple(HoldReason(ReasonKind.DEPENDENCY, f.why.gate, f.why.file,
                               f"{ref} {f.why.reason}", f.why.action, f.why.until, target=ref,
                               line=f.why.line)
                    for ref, f in sorted(new.items()))
    return replace(item, verdict=replace(
        verdict, reasons=verdict.reasons + reasons,
        held_objects=tuple(sorted({*verdict.held_objects, *new}))))


def _same_bundle(item: BundlePlan, holds: Iterable[HoldReason]) -> BundlePlan:
    """A bundle takes the freezes that cover it as it is live, besides those of its name now
    (an approval of its current content by a gate still lets that content through)."""
    verdict = item.verdict
    if verdict.verdict in (Verdict.FAILED, Verdict.HELD):
        return item
    said = {(r.kind, r.gate, r.file) for r in verdict.reasons}
    approved = {r.gate for r in verdict.reasons if r.kind is ReasonKind.APPROVED}
    new = [r for r in holds if (r.kind, r.gate, r.file) not in said and r.gate not in approved]
    if not new:
        return item
    reasons = verdict.reasons + tuple(new)
    holding = [r for r in reasons if r.action is Action.HOLD
               and r.kind not in (ReasonKind.APPROVED, ReasonKind.DEPENDENCY)]
    suspending = [r for r in reasons if r.action is Action.SUSPEND
                  and r.kind is not ReasonKind.APPROVED]
    if holding:
        outcome = BundleVerdict(verdict.bundle, Verdict.HELD, verdict.digest,
                                tuple(holding) + tuple(r for r in reasons if r not in holding),
                                verdict.next_change, verdict.held_objects,
                                by_live_identity=True)
    else:
        clusters = (tuple(sorted({c for r in suspending for c in r.clusters}))
                    if all(r.clusters for r in suspending) else None)
        outcome = BundleVerdict(verdict.bundle, Verdict.SUSPENDED, verdict.digest,
                                tuple(suspending) + tuple(r for r in reasons
                                                          if r not in suspending),
                                verdict.next_change, verdict.held_objects, clusters,
                                by_live_identity=True)
    return replace(bundle_plan(item.bundle, outcome, item.instance), rollout=item.rollout,
                   hooks=item.hooks, kept=item.kept)


def _frozen_objects(items: list[BundlePlan], records: Mapping[str, LiveRecord],
                    holds: Mapping[str, list[HoldReason]]) -> dict[ObjectRef, list[Freeze]]:
    """Every object live in a frozen bundle, and every object a held bundle claims now, with
    each bundle that holds it (an object can be live in one and claimed by another) and the
    first reason."""
    frozen: dict[ObjectRef, list[Freeze]] = {}
    for name, reasons in holds.items():
        for ref in records[name].by_ref():
            frozen.setdefault(ref, []).append(Freeze(name, reasons[0]))
    for item in items:
        if item.verdict.verdict not in FROZEN_VERDICTS:
            continue
        why = item.verdict.reasons[0]
        record = records.get(item.bundle.name)
        live = tuple(record.by_ref()) if record is not None else ()
        claimed = item.bundle.object_refs if item.verdict.verdict is Verdict.HELD else ()
        for ref in (*live, *claimed):
            found = frozen.setdefault(ref, [])
            if all(f.holder != item.bundle.name for f in found):
                found.append(Freeze(item.bundle.name, why))
    return frozen


def _frozen_bundles(items: list[BundlePlan], holds: Mapping[str, list[HoldReason]]
                    ) -> dict[str, HoldReason]:
    """The bundles whose live objects `_frozen_objects` freezes, with the first reason."""
    out = {name: reasons[0] for name, reasons in holds.items()}
    for item in items:
        if item.verdict.verdict in FROZEN_VERDICTS:
            out.setdefault(item.bundle.name, item.verdict.reasons[0])
    return out


def _other(freezes: list[Freeze] | None, name: str) -> Freeze | None:
    """The first freeze of an object held for a bundle other than `name`."""
    return next((f for f in freezes or () if f.holder != name), None)


def _refused(item: BundlePlan, record: LiveRecord | None,
             frozen: Mapping[ObjectRef, list[Freeze]]) -> BundlePlan:
    """An open bundle that would write or prune an object frozen for another bundle fails,
    and nothing of it is written this pass."""
    if not frozen or item.verdict.verdict not in (Verdict.APPLY, Verdict.SUSPENDED):
        return item
    name = item.bundle.name
    wanted = set(item.bundle.object_refs)
    leftover = [ref for ref in record.by_ref() if ref not in wanted] if record else []
    clashes = [(ref, "write", f) for ref in item.bundle.object_refs
               if (f := _other(frozen.get(ref), name)) is not None]
    clashes += [(ref, "delete", f) for ref in leftover
                if (f := _other(frozen.get(ref), name)) is not None]
    if not clashes:
        return item
    reasons = tuple(HoldReason(
        ReasonKind.FROZEN, str(Reason.FROZEN), freeze.why.file,
        frozen_write_text(verb, ref, freeze.holder, freeze.why),
        freeze.why.action, freeze.why.until, target=ref, line=freeze.why.line)
        for ref, verb, freeze in clashes[:5])
    verdict = BundleVerdict(name, Verdict.FAILED, item.verdict.digest,
                            reasons + item.verdict.reasons, item.verdict.next_change)
    return BundlePlan(item.bundle, verdict, (), (), item.rollout, item.hooks, item.kept,
                      item.instance)


def _claimed_elsewhere(name: str, record: LiveRecord, items: list[BundlePlan],
                       frozen: Mapping[ObjectRef, list[Freeze]]) -> list[HoldReason]:
    """Why a bundle that left Git keeps its objects: a held bundle claims some of them now
    (its freeze covers them), or a bundle that failed still has them in Git."""
    live = record.by_ref()
    for ref in live:
        freeze = _other(frozen.get(ref), name)
        if freeze is not None:
            return [replace(freeze.why, reason=f"{ref} is claimed now by bundle "
                            f"{freeze.holder}, which is held ({freeze.why.reason})")]
    for item in items:
        if item.verdict.verdict is not Verdict.FAILED:
            continue
        taken = next((ref for ref in item.bundle.object_refs if ref in live), None)
        if taken is not None:
            return [HoldReason(ReasonKind.FROZEN, item.bundle.name, item.bundle.source.path,
                               f"{taken} is still in Git, in bundle {item.bundle.name}, which "
                               "failed: nothing is pruned until it applies")]
    return []


