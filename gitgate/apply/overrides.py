"""Override policies written (or deleted) by one bundle but acting on others: a change to one
must not reach a cluster that a bundle it acts on keeps suspended. Pure over the pass's data.

Overrides are written in the last stage, after every suspension written in this pass was
confirmed in Karmada's bindings. An override aimed at a bundle whose suspension was written in
this pass but not confirmed (or not written at all: its write failed) is left out of the pass,
and its bundle fails saying why; the next pass writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gitgate.bundle.policies import ObjectIndex
from gitgate.bundle.reach import reaches
from gitgate.bundle.selectors import is_acting, may_act_on
from gitgate.model import Bundle, Manifest, ObjectRef, Verdict
from gitgate.plan import FrozenLive

PruneGuard = Callable[[Manifest], str | None]


@dataclass(frozen=True)
class OverrideWrite:
    writer: str  # the bundle that ships the override
    ref: ObjectRef
    targets: tuple[str, ...]  # the other bundles it acts on


def override_writes(bundles: Mapping[str, Bundle],
                    writes: Mapping[str, Iterable[Manifest]]) -> list[OverrideWrite]:
    """The overrides each bundle writes in this pass that act on other bundles."""
    out = []
    for name, objects in writes.items():
        bundle = bundles.get(name)
        if bundle is None or not bundle.acts_on:
            continue
        targets = dict(bundle.acts_on)
        for obj in objects:
            ref = ObjectRef.of(obj)
            if ref in targets:
                out.append(OverrideWrite(name, ref, targets[ref]))
    return out


def blocked(writes: list[OverrideWrite], unsafe: Mapping[str, str]) -> dict[str, list[str]]:
    """Per writing bundle, why each of its overrides must wait: one of its targets is in
    `unsafe` (bundle -> why its suspension does not hold yet)."""
    out: dict[str, list[str]] = {}
    for write in writes:
        why = [f"{target} ({unsafe[target]})" for target in write.targets if target in unsafe]
        if why:
            out.setdefault(write.writer, []).append(
                f"{write.ref} was not written: it acts on {', '.join(why)}")
    return out


def prune_guard(bundles: Iterable[Bundle], verdicts: Mapping[str, Verdict],
                unsafe: Mapping[str, str], frozen: Iterable[FrozenLive] = ()) -> PruneGuard:
    """For a live object about to be pruned: why it must stay (an override acting on a held
    bundle, or on one whose suspension does not hold yet; or on an object live in a held
    bundle as its record knows it, `frozen`), else None. Removing an override changes what
    its bundles run, exactly as editing it does."""
    index: ObjectIndex | None = None
    kept = list(bundles)
    held_live = list(frozen)

    def guard(live: Manifest) -> str | None:
        nonlocal index
        if not is_acting(live):
            return None
        reached = next((f for f in held_live
                        if reaches(live, f.ref, f.api_version, f.labels)), None)
        if reached is not None:
            return (f"it may act on {reached.ref}, live in the held bundle {reached.holder} "
                    f"({reached.why.where()}: {reached.why.reason})")
        if index is None:
            index = ObjectIndex(kept)
        for target in sorted(set(index.selected(live).values())):
            if verdicts.get(target) is Verdict.HELD:
                return f"it acts on the held bundle {target}"
            if target in unsafe:
                return f"it acts on {target} ({unsafe[target]})"
        return None

    return guard


def still_behind(previous: tuple[str, ...], written_while: tuple[str, ...] | None,
                 suspended: tuple[str, ...] | None) -> tuple[str, ...]:
    """The clusters of a bundle that run old overrides after this pass. `written_while`: the
    clusters suspended when an override acting on it was written in this pass (None: none
    written; ("*",): every cluster); `suspended`: what its verdict suspends now (None: none
    suspended; ("*",): all). A cluster whose suspension lifted gets the current overrides."""
    behind = set(previous) | set(written_while or ())
    if suspended is None:
        return ()
    if "*" in suspended:
        return tuple(sorted(behind))
    if "*" in behind:
        behind = (behind - {"*"}) | set(suspended)
    return tuple(sorted(behind & set(suspended)))


def held_with_failed(objects: Iterable[Manifest],
                     failed: Mapping[str, Iterable[tuple[str, ObjectRef]]]
                     ) -> dict[ObjectRef, list[str]]:
    """The acting objects (overrides, ...) among `objects` that could act on what a bundle
    that failed to render last applied (`failed`: bundle -> (apiVersion, ref) of its
    inventory): what they would change cannot be checked, so they wait with it."""
    out: dict[ObjectRef, list[str]] = {}
    for obj in objects:
        if not is_acting(obj):
            continue
        for bundle, entries in failed.items():
            if any(may_act_on(obj, api_version, ref.namespace, ref.kind, ref.name)
                   for api_version, ref in entries):
                out.setdefault(ObjectRef.of(obj), []).append(bundle)
    return out
