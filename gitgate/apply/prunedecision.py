"""The one prune decision of a pass: which objects left Git in each open bundle, which whole
bundles left Git (and whether a gate still holds them), and whether the mass-prune brake
stops every delete. Pure: (plan, inventories, the open bundles' leftovers) -> decision. The
engine carries it out; `plan --kubeconfig` prints it.

What only the live object can tell (`gitgate.io/prune: disabled`, an object that is no longer
the bundle's) is checked by whoever is about to delete: the engine before each delete, the
live diff when it shows one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from gitgate.apiserver.changeset import ChangeKind
from gitgate.apply import overrides
from gitgate.apply.inventory import Entry, Inventory, mass_prune
from gitgate.gate.evaluate import gone_bundle_holds
from gitgate.model import HoldReason, Manifest, ObjectRef, Verdict, is_under, join
from gitgate.model.ownership import identity_problem, other_instance, owned_by, state_problem
from gitgate.plan import BundlePlan, Plan
from gitgate.source.config import BUNDLE_CONFIG

DISABLED_ANNOTATION = "gitgate.io/prune"


@dataclass(frozen=True)
class GoneBundle:
    name: str
    inventory: Inventory
    holds: tuple[HoldReason, ...] = ()  # non-empty: a gate still covers it, nothing goes

    @property
    def held(self) -> bool:
        return bool(self.holds)


@dataclass(frozen=True)
class PruneDecision:
    leftovers: dict[str, tuple[Entry, ...]] = field(default_factory=dict)  # open bundles
    gone: dict[str, GoneBundle] = field(default_factory=dict)  # bundles that left Git
    prunes: int = 0  # objects this pass would delete
    managed: int = 0  # objects gitgate manages (every inventory)
    blocked: bool = False  # the mass-prune brake: nothing is deleted

    def brake_message(self, own: int) -> str:
        return (f"{own} object(s) left Git, but this pass would delete {self.prunes} of the "
                f"{self.managed} objects gitgate manages; run with --allow-mass-prune if that "
                "is intended")


def kept_back(item: BundlePlan,
              failed: Mapping[str, list[tuple[str, ObjectRef]]]) -> dict[ObjectRef, list[str]]:
    """Objects of an open bundle neither written nor pruned this pass: held through a
    dependency or a held bundle they act on, kept by a hook step, or acting objects that
    wait for a bundle that failed to render (the value names why, the failed bundles)."""
    out: dict[ObjectRef, list[str]] = {ref: [] for ref in (*item.verdict.held_objects,
                                                            *item.kept)}
    if failed:
        out.update(overrides.held_with_failed(item.bundle.objects, failed))
    return out


def failed_inventories(plan: Plan, inventories: Mapping[str, Inventory]
                       ) -> dict[str, list[tuple[str, ObjectRef]]]:
    """What each bundle that failed to render last applied (apiVersion, ref)."""
    failed = [b.bundle.name for b in plan.bundles if b.verdict.verdict is Verdict.FAILED]
    return {name: [(e.api_version, e.ref) for e in inventories[name].entries]
            for name in failed if name in inventories}


def _from_failed_source(name: str, inventory: Inventory, plan: Plan) -> bool:
    """A bundle missing from the plan because its source failed to render (the apps of a
    split source, say) has not left Git: it must not be pruned. A folder whose bundle.yaml
    cannot be read keeps the folders below it (discovery does not descend), so the bundles
    that were there have not left either."""
    for item in plan.bundles:
        folder = item.bundle.source.path
        if item.verdict.verdict is not Verdict.FAILED:
            continue
        if inventory.source == folder or name.startswith(item.bundle.name + "/"):
            return True
        unreadable = join(folder, BUNDLE_CONFIG)
        if (any(r.file == unreadable for r in item.verdict.reasons)
                and is_under(inventory.source, folder)):
            return True
    return False


def gone_bundles(plan: Plan, inventories: Mapping[str, Inventory],
                 scope: Callable[[str], bool] | None) -> dict[str, Inventory]:
    """Inventories of bundles that left Git. None when a problem no bundle owns (an unreadable
    gitgate.yaml) says the repo was not fully understood."""
    sources = {b.bundle.source.path for b in plan.bundles}
    if any(p.source not in sources for p in plan.problems):
        return {}
    names = {b.bundle.name for b in plan.bundles}
    return {name: inv for name, inv in inventories.items()
            if name not in names and (scope is None or scope(name))
            and not _from_failed_source(name, inv, plan)}


def decide(plan: Plan, inventories: Mapping[str, Inventory],
           leftovers: Mapping[str, tuple[Entry, ...]],
           scope: Callable[[str], bool] | None = None,
           allow_mass_prune: bool = False) -> PruneDecision:
    """`leftovers`: per open bundle, the inventory entries that left Git (its diff)."""
    gone = {name: GoneBundle(name, inventory, plan.live_holds.get(name) or tuple(
        gone_bundle_holds(name, dict(inventory.labels), plan.gates, plan.invalid_gates,
                          inventory.source)))
        for name, inventory in gone_bundles(plan, inventories, scope).items()}
    prunes = sum(len(e) for e in leftovers.values()) + sum(
        len(g.inventory.entries) for g in gone.values() if not g.held)
    managed = sum(len(inv.entries) for inv in inventories.values())
    blocked = mass_prune(prunes, managed) and not allow_mass_prune
    return PruneDecision({n: e for n, e in leftovers.items() if e}, gone, prunes, managed,
                         blocked)


def claimers(plan: Plan) -> Callable[[ObjectRef], str | None]:
    """Which bundle of the plan claims an object now (None: none). An object still in Git is
    never pruned, whichever bundle had it and whatever that bundle's verdict: the one that
    claims it now takes it over (the index is built at the first question)."""
    index: dict[ObjectRef, str] | None = None

    def claimer(ref: ObjectRef) -> str | None:
        nonlocal index
        if index is None:
            index = {r: b.bundle.name for b in plan.bundles for r in b.bundle.object_refs}
        return index.get(ref)

    return claimer


class Listed(StrEnum):
    """Where a pass's result lists an object its prune did not delete."""

    NOWHERE = "nowhere"
    HELD = "held"  # `held`, with why: it stays in the record, a later pass retries
    NOT_OWNED = "notOwned"  # `not_owned`
    KEPT = "kept"  # `kept`


@dataclass(frozen=True)
class Handling:
    """What an outcome does: the engine deletes the object (`deletes`) or leaves it; its entry
    leaves the bundle's record unless `stays`; the pass's result lists it (`listed`), and
    `plan --kubeconfig` shows it as `shown` (None: not at all), with the check's why."""

    deletes: bool = False
    stays: bool = False
    listed: Listed = Listed.NOWHERE
    shown: ChangeKind | None = ChangeKind.SKIPPED


class Outcome(StrEnum):
    """What happens to a live object that left Git; each says what it does (`handling`), so
    the engine (`apply.pruning`), `plan --kubeconfig` (`apply.livediff`) and `gitgate remove`
    carry out a new one without a change."""

    DELETE = "delete"
    GONE = "gone"  # nothing live any more: the entry goes
    NOT_OWNED = "notOwned"  # someone else's now (or gitgate's own state): left, untracked
    DISABLED = "disabled"  # `gitgate.io/prune: disabled`: left, untracked
    WAITS = "waits"  # acts on a held bundle (or one not confirmed suspended): left, recorded

    @property
    def handling(self) -> Handling:
        return _HANDLING[self]


_HANDLING = {
    Outcome.DELETE: Handling(deletes=True, shown=ChangeKind.DELETED),
    Outcome.GONE: Handling(shown=None),
    Outcome.NOT_OWNED: Handling(listed=Listed.NOT_OWNED),
    Outcome.DISABLED: Handling(listed=Listed.KEPT),
    Outcome.WAITS: Handling(stays=True, listed=Listed.HELD, shown=ChangeKind.HELD),
}


@dataclass(frozen=True)
class LiveCheck:
    outcome: Outcome
    why: str = ""


def entry_manifest(entry: Entry) -> Manifest:
    meta: Manifest = {"name": entry.name}
    if entry.namespace:
        meta["namespace"] = entry.namespace
    return {"apiVersion": entry.api_version, "kind": entry.kind, "metadata": meta}


def precheck(entry: Entry) -> LiveCheck | None:
    """An entry that is never deleted whatever is live: gitgate's own state, or a name that
    is not a name (never sent as a path)."""
    obj = entry_manifest(entry)
    if state_problem(obj) or identity_problem(obj):
        return LiveCheck(Outcome.NOT_OWNED, "gitgate's own state, or not a valid name")
    return None


def check_live(live: Manifest | None, bundle: str,
               guard: Callable[[Manifest], str | None], instance: str) -> LiveCheck:
    """What happens to a live object that left Git with `bundle` of `instance`."""
    if live is None:
        return LiveCheck(Outcome.GONE)
    if not owned_by(live, bundle):
        return LiveCheck(Outcome.NOT_OWNED, f"not labelled as {bundle}'s any more")
    other = other_instance(live, instance)
    if other is not None:
        return LiveCheck(Outcome.NOT_OWNED, f"labelled as gitgate instance {other}'s now")
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    if annotations.get(DISABLED_ANNOTATION) == "disabled":
        return LiveCheck(Outcome.DISABLED, f"{DISABLED_ANNOTATION}: disabled")
    why = guard(live)
    if why is not None:
        return LiveCheck(Outcome.WAITS, f"left Git, kept while {why}")
    return LiveCheck(Outcome.DELETE)
