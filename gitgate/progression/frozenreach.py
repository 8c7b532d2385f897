"""What a freeze holds as it is live: the bundles nothing may change around (held, frozen,
or failed or gone while a freeze holds them), every object their records say is live, what
their live workloads use, and the Karmada policies that act, or may act, on those objects as
their records know them. Pure: plans and records in, what is held out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from gitgate.bundle.deps import WORKLOAD_KINDS
from gitgate.bundle.reach import acting_ref, live_labels, may_use, reaches, used_by
from gitgate.bundle.selectors import is_acting, is_propagation, selectors_of
from gitgate.model import Action, HoldReason, ObjectRef, ReasonKind, Verdict
from gitgate.plan import BundlePlan, FrozenLive


class LiveRecord(Protocol):
    """A bundle as it is live: its record's identity and inventory."""

    @property
    def bundle(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def labels(self) -> tuple[tuple[str, str], ...]: ...
    def by_ref(self) -> Mapping[ObjectRef, object]: ...


@dataclass(frozen=True)
class Freeze:
    """Why an object may not be written by any bundle but `holder`."""

    holder: str
    why: HoldReason


Around = dict[ObjectRef, list[Freeze]]



def frozen_write_text(verb: str, ref: ObjectRef, holder: str, why: HoldReason) -> str:
    """Why a bundle may not `verb` (write, delete) `ref`: it is live in `holder`, which
    `why` freezes."""
    return (f"would {verb} {ref}, which is live in bundle {holder}, held by {why.where()} "
            f"({why.reason}): a freeze covers what is live whichever bundle claims it now; "
            "lift the freeze, or leave the object where it is until then")


def holding(reasons: Iterable[HoldReason] | None) -> HoldReason | None:
    """The first of `reasons` that holds (not one that only suspends)."""
    return next((r for r in reasons or () if r.action is Action.HOLD), None)


def stopped_bundles(items: list[BundlePlan], records: Mapping[str, LiveRecord],
             holds: Mapping[str, list[HoldReason]]) -> dict[str, HoldReason]:
    """The bundles nothing may change around, with the first reason: a held one, one that
    failed for a frozen object, and one a freeze holds as it is live that failed (a render
    that breaks) or left Git, whose record alone says what it has live."""
    out = {item.bundle.name: item.verdict.reasons[0] for item in items
           if item.verdict.verdict is Verdict.HELD or any(
               r.kind is ReasonKind.FROZEN for r in item.verdict.reasons)}
    verdicts = {item.bundle.name: item.verdict.verdict for item in items}
    for name, found in holds.items():
        why = holding(found)
        if why is not None and name in records and verdicts.get(name, Verdict.FAILED) in (
                Verdict.FAILED, Verdict.HELD):
            out.setdefault(name, why)
    return out


def suspended_bundles(items: list[BundlePlan], records: Mapping[str, LiveRecord],
                      holds: Mapping[str, list[HoldReason]]) -> dict[str, HoldReason]:
    """The bundles suspended on some cluster, with the first reason that suspends: one whose
    verdict is suspended, and one a suspension covers as it is live that failed or left Git.
    What their workloads use must not change under them on the suspended clusters, and an
    object's template goes to every cluster its bundle is placed on."""
    out = {item.bundle.name: next((r for r in item.verdict.reasons
                                   if r.action is Action.SUSPEND), item.verdict.reasons[0])
           for item in items if item.verdict.verdict is Verdict.SUSPENDED
           and item.verdict.reasons}
    verdicts = {item.bundle.name: item.verdict.verdict for item in items}
    for name, found in holds.items():
        why = next((r for r in found if r.action is Action.SUSPEND), None)
        if why is not None and name in records and verdicts.get(name, Verdict.FAILED) is (
                Verdict.FAILED):
            out.setdefault(name, why)
    return out


def frozen_live_objects(stopped: Mapping[str, HoldReason],
                 records: Mapping[str, LiveRecord]) -> tuple[FrozenLive, ...]:
    """Every object live in a stopped bundle, as its record knows it."""
    out = []
    for name, why in stopped.items():
        record = records.get(name)
        if record is None:
            continue
        instance = str(getattr(record, "instance", ""))
        for ref, entry in record.by_ref().items():
            api_version = getattr(entry, "api_version", None)
            labels = live_labels(getattr(entry, "labels", None), record.bundle, instance)
            out.append(FrozenLive(ref, api_version if isinstance(api_version, str) else None,
                                  labels, name, why))
    return tuple(out)


UNKNOWN_USES = ("its record does not say what it uses (an earlier release wrote it), so "
                "everything of its namespace it could use is held; a pass that writes the "
                "bundle again records it")
UNKNOWN_LABELS = ("its record does not say its labels (an earlier release wrote it), so every "
                  "label selector is taken to match; a pass that writes the bundle again "
                  "records them")


def used_live(stopped: Mapping[str, HoldReason], records: Mapping[str, LiveRecord],
               present: set[ObjectRef], out: Around) -> None:
    """What the workloads live in stopped bundles use, as their records say (all they could
    use where a record does not say), into `out`."""
    for name, why in stopped.items():
        record = records.get(name)
        if record is None:
            continue
        for ref, entry in record.by_ref().items():
            if (ref.group, ref.kind) not in WORKLOAD_KINDS:
                continue
            uses = getattr(entry, "uses", None)
            if isinstance(uses, tuple):
                used, note = used_by(ref, uses) & present, ""
            else:
                used, note = {r for r in present if may_use(ref, r)}, f"; {UNKNOWN_USES}"
            for target in sorted(used):
                out.setdefault(target, []).append(Freeze(name, replace(
                    why, reason=f"is used by {ref}, live in frozen bundle {name}{note} "
                                f"({why.reason})")))


def acting_on_live(items: list[BundlePlan], frozen_live: tuple[FrozenLive, ...],
                    out: Around) -> None:
    """Each Karmada policy of a bundle that acts (or may act) on an object live in another,
    stopped bundle, judged against what that bundle's record knows of it (whatever the
    commit now renders of it, or does not), into `out`."""
    by_kind: dict[str, list[FrozenLive]] = {}
    for live in frozen_live:
        by_kind.setdefault(live.ref.kind, []).append(live)
    for item in items:
        for actor in item.bundle.objects:
            if not (is_acting(actor) or is_propagation(actor)):
                continue
            kinds = {s.get("kind") for s in selectors_of(actor) if isinstance(s, dict)}
            candidates = (frozen_live if not kinds or not all(isinstance(k, str) for k in kinds)
                          else [f for k in kinds for f in by_kind.get(str(k), ())])
            found = next((f for f in candidates if f.holder != item.bundle.name
                          and reaches(actor, f.ref, f.api_version, f.labels)), None)
            if found is None:
                continue
            note = f"; {UNKNOWN_LABELS}" if found.labels is None else ""
            out.setdefault(ObjectRef.of(actor), []).append(Freeze(found.holder, replace(
                found.why, reason=f"may act on {found.ref}, live in frozen bundle "
                                  f"{found.holder}{note} ({found.why.reason})")))


UNKNOWN_ACTS = ("its record does not say what it acted on (an earlier release wrote it), so "
                "it is taken to reach every frozen object in its namespace")


def acted_on(items: list[BundlePlan], records: Mapping[str, LiveRecord],
             stopped: Mapping[str, HoldReason], frozen_live: tuple[FrozenLive, ...],
             out: Around) -> None:
    """Each override (or other acting object) a bundle has live that acted on a stopped
    bundle when it was written, as its record says: changing or deleting it changes what that
    bundle runs, whatever its new version selects (where the record does not say, one that
    may reach a frozen object of its namespace), into `out`."""
    for item in items:
        name = item.bundle.name
        record = records.get(name)
        if record is None:
            continue
        for ref, entry in record.by_ref().items():
            if not acting_ref(ref):
                continue
            acts = getattr(entry, "acts", None)
            if isinstance(acts, tuple):
                target = next((t for t in acts if t in stopped and t != name), None)
                if target is not None:
                    out.setdefault(ref, []).append(Freeze(target, replace(
                        stopped[target], reason=f"acts on the held bundle {target} as it is "
                                                f"live ({stopped[target].reason})")))
                continue
            found = next((f for f in frozen_live if f.holder != name and (
                not ref.namespace or f.ref.namespace == ref.namespace)), None)
            if found is not None:
                out.setdefault(ref, []).append(Freeze(found.holder, replace(
                    found.why, reason=f"may act on {found.ref}, live in frozen bundle "
                                      f"{found.holder}; {UNKNOWN_ACTS} ({found.why.reason})")))
