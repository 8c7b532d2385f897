"""Each bundle's starting point in a pass: failed, held, or open with its diff against its
inventory (a resync sends everything), in `dependsOn` order; a bundle that left Git while a
gate holds it keeps everything."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from gitgate.apiserver.changeset import ChangeKind
from gitgate.apply import prunedecision, stages
from gitgate.apply.inventory import Inventory, contested, diff
from gitgate.apply.work import ApplyOptions, BundleResult, BundleWork
from gitgate.errors import Reason
from gitgate.model import HoldReason, Verdict, described
from gitgate.plan import Plan


def _resync_due(previous: Inventory | None, options: ApplyOptions) -> bool:
    if previous is None or not previous.last_full_apply:
        return True
    try:
        last = datetime.fromisoformat(previous.last_full_apply.replace("Z", "+00:00"))
    except ValueError:
        return True
    return options.now - last >= options.resync


def not_out_yet(needs: tuple[str, ...], elsewhere: frozenset[str],
                inventories: dict[str, Inventory]) -> list[str]:
    """The dependencies written by another pass whose records say they have not gone out:
    none recorded, never applied, or failed (as a failed dependency in this pass holds)."""
    waiting = []
    for need in needs:
        if need not in elsewhere:
            continue
        record = inventories.get(need)
        if record is None or not record.applied_digest or record.verdict == Verdict.FAILED:
            waiting.append(need)
    return waiting


def held_never_out(needs: tuple[str, ...], work: dict[str, BundleWork]) -> list[str]:
    """The dependencies this pass holds that no pass ever applied (no record, or none that
    says so): what depends on them waits, as for a dependency another pass writes."""
    return [need for need in needs if need in work and (unit := work[need]).plan is not None
            and unit.plan.verdict.verdict is Verdict.HELD
            and (unit.previous is None or not unit.previous.applied_digest)]


def prepare(plan: Plan, inventories: dict[str, Inventory],
             options: ApplyOptions) -> tuple[list[str], dict[str, BundleWork]]:
    """Each bundle's starting point: failed, held, or open with its diff against the
    inventory; in `dependsOn` order."""
    order, order_problems = stages.bundle_order(
        {b.bundle.name: b.bundle.source.options.depends_on for b in plan.bundles},
        plan.elsewhere)
    plans = {b.bundle.name: b for b in plan.bundles}
    failed = prunedecision.failed_inventories(plan, inventories)
    twice = contested(inventories.values())
    work: dict[str, BundleWork] = {}
    for name in order:
        item = plans[name]
        previous = inventories.get(name)
        verdict = item.verdict.verdict
        result = BundleResult(name, str(verdict))
        unit = BundleWork(item, previous, None, result, dict(previous.by_ref()) if previous else {})
        work[name] = unit
        if verdict is Verdict.FAILED:
            result.fail(_failure_reason(item.verdict.reasons), described(item.verdict.reasons))
        elif verdict is Verdict.HELD:
            result.reason = Reason.HELD
            result.message = described(item.verdict.reasons)
        elif name in order_problems:
            result.fail(Reason.DEPENDENCY_NOT_READY, order_problems[name])
        elif outside := not_out_yet(item.bundle.source.options.depends_on, plan.elsewhere,
                                    inventories):
            result.fail(Reason.DEPENDENCY_NOT_READY,
                        f"depends on {', '.join(outside)}, which this pass does not write "
                        "(another replica's shard, or outside --bundle) and whose record "
                        "shows it failed or never applied: it waits for it")
        elif held := held_never_out(item.bundle.source.options.depends_on, work):
            result.fail(Reason.DEPENDENCY_NOT_READY,
                        f"depends on {', '.join(held)}, which is held and has never gone out: "
                        "it waits for it")
        else:
            unit.resync = _resync_due(previous, options)
            kept = prunedecision.kept_back(item, failed)
            unit.diff = diff(item.written, previous, resync=unit.resync, keep=frozenset(kept),
                             contested=twice)
            waiting = sorted((ref, names) for ref, names in kept.items() if names)
            if waiting:
                result.message = "; ".join(
                    f"{ref} is held with {', '.join(names)}: that bundle failed to render, "
                    "so what it would change there cannot be checked"
                    for ref, names in waiting)
            elif held_for := [r for r in item.verdict.reasons
                              if r.target is not None and r.target in kept]:
                result.message = described(held_for)  # kept around a frozen bundle
            unit.resync_only = unit.diff.same_as_inventory
            for ref in unit.diff.unchanged:
                result.changes.add(ref, ChangeKind.UNCHANGED)
    return order, work


def held_gone_bundle(name: str, inventory: Inventory,
                     holds: Iterable[HoldReason]) -> BundleWork:
    """A bundle that left Git while a gate covers it: nothing is deleted until the gate lifts."""
    why = "; ".join(f"{r.file}: {r.reason}" for r in holds)
    result = BundleResult(name, str(Verdict.HELD), Reason.HELD,
                          f"left Git, but is held ({why}): nothing is pruned while held")
    return BundleWork(None, inventory, None, result, dict(inventory.by_ref()))


def _failure_reason(reasons: tuple[HoldReason, ...]) -> Reason:
    """The reason of the first problem (a broken bundle.yaml is InvalidConfig, a clash is
    DuplicateObject), RenderFailed when it is none of the vocabulary."""
    known = {str(r) for r in Reason}
    first = next((r.gate for r in reasons if r.gate in known), None)
    return Reason(first) if first is not None else Reason.RENDER_FAILED
