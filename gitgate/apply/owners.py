"""Who owns, by its labels, each object a pass writes, read before anything is written: a
bundle takes no object over from another gitgate instance (`gitgate.io/instance`), nor one
whose live `gitgate.io/bundle` label names another bundle a freeze holds now
(`progression.liveowners`): the records, the usual memory of what a frozen bundle has live,
can be deleted or edited on the API server, the label on the object stays. Both are read
with the lists the pass makes anyway, one per apiVersion, kind and namespace of what it
writes; a no-op pass writes and reads nothing. An object whose owner cannot be read is not
written while a freeze could hold it."""

from __future__ import annotations

from gitgate.apiserver.fanout import fan_out
from gitgate.apiserver.ports import ClusterPort, list_metadata
from gitgate.apply.work import ApplyOptions, BundleWork
from gitgate.errors import FrozenObject, GitgateError, KubeError, OtherInstance, Reason
from gitgate.model import BUNDLE_LABEL, Manifest, ObjectRef
from gitgate.model.ownership import INSTANCE_LABEL, foreign_selector, other_instance
from gitgate.progression.frozenreach import frozen_write_text
from gitgate.progression.liveowners import Holder, OwnerFreezes

Key = tuple[str, str, str]  # apiVersion, kind, namespace


def read_owners(work: dict[str, BundleWork], staged: dict[str, dict[int, list[Manifest]]],
                cluster: ClusterPort, options: ApplyOptions, freezes: OwnerFreezes) -> None:
    """Which of the objects the pass writes another gitgate instance labels as its own, and
    which are live in another bundle a freeze holds: one list per apiVersion, kind and
    namespace, of only other instances' objects (`foreign_selector`), or of every object
    with a bundle label when a freeze could hold one of them (an earlier release wrote
    objects without an instance label, and a held bundle writes nothing that would add it),
    before anything is written (a list that
    fails leaves its objects to be read one by one before their write). A bundle with such
    an object fails here: it takes no object over from another instance, unless
    `--force-conflicts` (as it takes no field over from another field manager), and none
    from a frozen bundle. What a resync reads anyway is judged when it is read."""
    wanted: dict[Key, list[tuple[BundleWork, ObjectRef]]] = {}
    wide: set[Key] = set()
    for name, stages_ in staged.items():
        unit = work[name]
        if freezes.any_for(name):
            unit.freezes = freezes
        elif options.force_conflicts:
            continue
        for obj in (o for batch in stages_.values() for o in batch):
            ref = ObjectRef.of(obj)
            if ref not in unit.resync_only:
                key = (obj["apiVersion"], ref.kind, ref.namespace)
                wanted.setdefault(key, []).append((unit, ref))
                if unit.freezes is not None:
                    wide.add(key)
    keys = sorted(wanted)
    answers = fan_out(lambda key: list_metadata(
        cluster, *key, BUNDLE_LABEL if key in wide else foreign_selector(options.instance)),
        keys, options.concurrency)
    for key, answer in zip(keys, answers, strict=True):
        if isinstance(answer, GitgateError):
            for unit, ref in wanted[key]:
                unit.owner_unread.add(ref)
            continue
        live = {str(o["metadata"]["name"]): o for o in answer}
        for unit, ref in wanted[key]:
            if ref.name not in live:
                continue
            owner = other_instance(live[ref.name], options.instance)
            if owner is not None and not options.force_conflicts:
                unit.foreign[ref] = owner
            elif owner is None and (held := _frozen_holder(unit, live[ref.name])):
                unit.frozen[ref] = held
    for unit in work.values():
        if unit.result.failed:
            continue
        if unit.foreign:
            ref, owner = min(unit.foreign.items())
            unit.result.fail(Reason.OTHER_INSTANCE, _foreign_message(
                ref, owner, options.instance, len(unit.foreign)))
        elif unit.frozen:
            ref, held = min(unit.frozen.items())
            unit.result.fail(Reason.FROZEN, frozen_message(ref, held, len(unit.frozen)))


def _frozen_holder(unit: BundleWork, live: Manifest | None) -> Holder | None:
    """The frozen bundle other than the unit's that the live object's bundle label names."""
    return None if unit.freezes is None else frozen_holder(unit.freezes, live,
                                                           unit.result.bundle)


def frozen_holder(freezes: OwnerFreezes, live: Manifest | None, writer: str) -> Holder | None:
    """The frozen bundle other than `writer` that the live object's bundle label names."""
    if live is None:
        return None
    label = ((live.get("metadata") or {}).get("labels") or {}).get(BUNDLE_LABEL)
    return freezes.holder(label, writer) if isinstance(label, str) else None


def _foreign_message(ref: ObjectRef, owner: str, instance: str, count: int = 1) -> str:
    more = f" (and {count - 1} more of this bundle's objects)" if count > 1 else ""
    return (f"{ref}{more} is labelled {INSTANCE_LABEL}: {owner}, another gitgate instance's "
            f"on this API server; instance {instance!r} does not take it over, and nothing of "
            "this bundle was written. Remove it from this repo, apply it with that instance, "
            "or take it over with --force-conflicts")


def frozen_message(ref: ObjectRef, held: Holder, count: int = 1) -> str:
    """Why a bundle fails that would write `ref`, live in the frozen bundle `held` names."""
    more = f" (and {count - 1} more of this bundle's objects)" if count > 1 else ""
    holder, why = held
    return (f"{frozen_write_text('write', ref, holder, why)}{more}; its live {BUNDLE_LABEL} "
            f"label names {holder}, whatever the Bundle records say")


def refuse_owner(unit: BundleWork, ref: ObjectRef, live: Manifest | None,
                 options: ApplyOptions) -> None:
    """Raises OtherInstance for an object another instance labels as its own (unless
    `--force-conflicts`), FrozenObject for one live in another bundle a freeze holds."""
    owner = other_instance(live, options.instance)
    if owner is not None and not options.force_conflicts:
        raise OtherInstance(_foreign_message(ref, owner, options.instance))
    held = _frozen_holder(unit, live) if owner is None else None
    if held is not None:
        raise FrozenObject(frozen_message(ref, held))


def read_owner(unit: BundleWork, ref: ObjectRef, api_version: str,
               cluster: ClusterPort) -> Manifest | None:
    """The live object, read to judge its owner; while a freeze could hold it, a read that
    fails says so, naming the object (the object is not written)."""
    try:
        return cluster.get(api_version, ref.kind, ref.namespace, ref.name)
    except KubeError as exc:
        if unit.freezes is None:
            raise
        raise KubeError(
            f"could not read {ref} to check that no frozen bundle has it live "
            f"({exc.message}): an object whose owner cannot be checked is not written while "
            "a freeze stands; the next pass reads it again", status=exc.status,
            api_reason=exc.api_reason, reason=Reason.READ_FAILED) from None
