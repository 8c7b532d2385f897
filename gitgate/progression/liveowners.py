"""Which bundle a live object belongs to by its `gitgate.io/bundle` label, and whether a
freeze holds that bundle now. The records are the memory of what a frozen bundle has live;
someone with access to the API server can delete or edit them. The label gitgate writes on
every object it applies still names the bundle, so a write of an object whose live label
names another bundle a freeze holds is refused, whatever the records say:

- a bundle the plan holds or suspends by a freeze, by its name or as it is live
  (`Plan.frozen_bundles`, from `progression.livefreeze`);
- a bundle in Git that failed (its verdict does not say whether a freeze covers it): a
  gate selecting its name or labels, a `PAUSE` file or an unreadable gate file over its
  folder;
- a bundle neither in Git nor on record: a gate naming it, or a `PAUSE` file in the
  folder of its source (`SOURCE` of `SOURCE/APP`): the folder that name comes from, or
  whose bundles in Git or on record bear it.

Pure: the plan, the records and a label value in, the freezing bundle and why out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gitgate.model import (
    Action,
    HoldReason,
    ObjectRef,
    Verdict,
    bundle_from_label,
    bundle_label_value,
)
from gitgate.plan import Plan
from gitgate.progression.frozenreach import LiveRecord
from gitgate.progression.livefreeze import record_holds
from gitgate.source.discover import bundle_name_for, pause_covering

Holder = tuple[str, HoldReason]  # the frozen bundle and the first reason


@dataclass(frozen=True)
class _Named:
    """A bundle known only by the name its objects' label gives (no record, not in Git)."""

    bundle: str
    source: str = ""
    labels: tuple[tuple[str, str], ...] = ()

    def by_ref(self) -> Mapping[ObjectRef, object]:
        return {}


@dataclass(frozen=True)
class OwnerFreezes:
    """The freezes of a plan, by the bundle label a live object carries."""

    plan: Plan
    frozen: Mapping[str, Holder]  # label value -> the bundle and why, for the known bundles
    known: frozenset[str]  # label values of the bundles in the plan or on record
    # each paused folder's source names: its folder's, and those its bundles bear in the
    # plan or on record (`bundle.yaml`'s `name`)
    sources: Mapping[str, frozenset[str]]

    def any_for(self, writer: str) -> bool:
        """Whether an object `writer` writes could be live in a frozen bundle: one is frozen
        besides it, or a freeze file could cover a bundle nothing else knows."""
        return any(name != writer for name, _ in self.frozen.values()) or bool(
            self.plan.pauses or self.plan.invalid_gates
            or any(state.active for state in self.plan.gates))

    def holder(self, label: str, writer: str) -> Holder | None:
        """The bundle other than `writer` that an object labelled `label` is live in, with
        the freeze that holds it now, else None."""
        if label in self.known:  # by name: a long name's shortened label may be another's name
            held = self.frozen.get(label)
            return held if held is not None and held[0] != writer else None
        if label == bundle_label_value(writer):
            return None
        name = bundle_from_label(label)
        # a long name's label is shortened: it is matched by the label its source would write
        name = next((source for names in self.sources.values() for source in names
                     if bundle_label_value(source) == label), name)
        pauses = {folder: why for folder, why in self.plan.pauses.items()
                  if _source_name(name) in self.sources.get(folder, ())
                  or _below(_source_name(name), folder)}
        reasons = [r for folder in pauses for r in record_holds(
            _Named(name, folder), (), (), pauses)]
        reasons += record_holds(_Named(name), self.plan.gates, self.plan.invalid_gates, {})
        why = _freezing(reasons)
        return None if why is None else (name, why)


def _below(name: str, folder: str) -> bool:
    """Whether a source name known from a label alone may come from a folder below the
    paused `folder` (`apps-web` below `apps`): a `PAUSE` holds every source below it."""
    return folder == "." or name.startswith(bundle_name_for(folder) + "-")


def _freezing(reasons: list[HoldReason]) -> HoldReason | None:
    return next((r for r in reasons if r.action in (Action.HOLD, Action.SUSPEND)), None)


def owner_freezes(plan: Plan, records: Mapping[str, LiveRecord]) -> OwnerFreezes:
    """The freezes of `plan` by bundle label (see the module's doc)."""
    frozen = {bundle_label_value(name): (name, why)
              for name, why in plan.frozen_bundles.items()}
    for item in (*plan.bundles, *plan.outside):
        bundle = item.bundle
        if item.verdict.verdict is Verdict.FAILED and bundle.name not in plan.frozen_bundles \
                and (why := _freezing(record_holds(
                    _Named(bundle.name, bundle.source.path, tuple(sorted(bundle.labels.items()))),
                    plan.gates, plan.invalid_gates, plan.pauses))):
            frozen[bundle_label_value(bundle.name)] = (bundle.name, why)
    known = frozenset(bundle_label_value(name) for name in (
        *(item.bundle.name for item in (*plan.bundles, *plan.outside)), *records))
    sources = {folder: {bundle_name_for(folder)} for folder in plan.pauses}
    for item in (*plan.bundles, *plan.outside):
        if (folder := pause_covering(item.bundle.source.path, plan.pauses)) is not None:
            sources[folder].add(item.bundle.source.bundle_name)
    for record in records.values():
        if record.source and (folder := pause_covering(record.source, plan.pauses)):
            sources[folder].add(_source_name(record.bundle))
    return OwnerFreezes(plan, frozen, known,
                        {folder: frozenset(names) for folder, names in sources.items()})


def _source_name(bundle: str) -> str:
    """The name of the source a bundle comes from: `shop` of the app `shop/carts`."""
    return bundle.split("/", 1)[0]
