"""One apply pass over a small cluster port, in order: prepare each bundle, record intent,
read for resync, write by stage (a suspension confirmed before templates), prune as decided
(`apply.prunedecision`), record inventories. Each step is its own module; this one orders them."""

from __future__ import annotations

import threading
from collections.abc import Callable

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import overrides, prunedecision, takeover
from gitgate.apply.instanceowner import refuse_other_repo
from gitgate.apply.intent import record_intent
from gitgate.apply.inventory import Inventory
from gitgate.apply.owners import read_owners
from gitgate.apply.passrecords import overrides_written, report_hooks, write_inventories
from gitgate.apply.preparation import held_gone_bundle, prepare
from gitgate.apply.pruning import prune_entries, prune_gone_bundle, release_taken
from gitgate.apply.work import ApplyOptions, PassResult, RecordStore
from gitgate.apply.writes import (
    apply_stages,
    read_live,
    report_blocked,
    report_unchecked,
    staged_writes,
)
from gitgate.errors import Reason
from gitgate.model import Verdict
from gitgate.plan import Plan
from gitgate.progression.liveowners import owner_freezes

SUSPENDING = (Verdict.SUSPENDED, Verdict.HALTED)  # a bundle whose templates stay where they are


def run_pass(plan: Plan, cluster: ClusterPort, options: ApplyOptions, ledger: RecordStore,
             inventories: dict[str, Inventory],
             scope: Callable[[str], bool] | None = None,
             stop: threading.Event | None = None,
             keep_inventories: bool = False) -> PassResult:
    """Apply `plan`. With `scope`, only bundles it accepts are touched: an inventory outside it
    is never taken for a bundle that left Git. With `stop` set, the pass ends after the object
    in flight, prunes nothing and records status. `ledger`: the records, written through it
    (the caller's, over `inventories`: as read earlier in this pass, nothing in between writes
    them). `keep_inventories`: the result carries every inventory as the pass left them
    (`PassResult.inventories`, from the ledger's `known`). A pass over an instance
    another repo owns raises OtherRepo before any write (`apply.instanceowner`)."""
    refuse_other_repo(inventories, options.origin, options.instance, options.adopt)
    order, work = prepare(plan, inventories, options)
    decision = prunedecision.decide(plan, inventories,
                             {n: w.diff.to_prune for n, w in work.items() if w.diff}, scope,
                             options.allow_mass_prune)
    mass = decision.blocked
    staged = {name: staged_writes(w, cluster) for name, w in work.items() if w.diff}
    read_owners(work, staged, cluster, options, owner_freezes(plan, inventories))
    if not options.dry_run:
        record_intent(work, staged, cluster, options, ledger, plan.revision)
    read_live(work, cluster, options)
    # the records of the bundles that may hand objects over (`takeover.gives`), and of those
    # that left Git (kept too: what another bundle takes of them is frozen for none; a freeze
    # on one of them refuses the taking write before any is let go of)
    giving = {name: takeover.Giver(unit.previous, prunes=unit.diff is not None)
              for name, unit in work.items()
              if unit.previous is not None and takeover.gives(unit)}
    giving |= {name: takeover.Giver(gone.inventory, prunes=not (gone.held or mass))
               for name, gone in decision.gone.items()}
    unsafe = apply_stages(work, order, cluster, options, staged, stop, giving)
    report_blocked(work)
    interrupted = stop is not None and stop.is_set()
    guard = overrides.prune_guard((b.bundle for b in plan.bundles),
                                  {b.bundle.name: b.verdict.verdict for b in plan.bundles}, unsafe,
                                  plan.frozen_live)
    claimer = prunedecision.claimers(plan)
    if not options.dry_run:
        for unit in work.values():
            if unit.diff is None or unit.result.failed or not unit.diff.to_prune:
                continue
            if interrupted:
                unit.result.reason = Reason.INTERRUPTED
                unit.result.message = "stopping: pruning left for the next pass"
            elif unit.plan is not None and unit.plan.verdict.verdict in SUSPENDING:
                # a deleted template is deleted on every member, the suspended ones too
                unit.result.held += [f"{e.ref}: left Git, deleted once the bundle's "
                                     "suspension lifts" for e in unit.diff.to_prune]
                unit.result.message = unit.result.message or "; ".join(unit.result.held)
            elif mass:
                unit.result.reason = Reason.PRUNE_BLOCKED
                unit.result.message = decision.brake_message(len(unit.diff.to_prune))
            else:
                prune_entries(unit, unit.diff.to_prune, cluster, guard, options, claimer)
        if not (mass or interrupted):
            for name, gone in decision.gone.items():
                work[name] = (held_gone_bundle(name, gone.inventory, list(gone.holds))
                              if gone.held else
                              prune_gone_bundle(name, gone.inventory, cluster, options, guard,
                                                 ledger, claimer))
        release_taken(work, [(name, gone.inventory) for name, gone in decision.gone.items()
                             if gone.held or mass or interrupted], cluster, ledger)
    report_hooks(work)
    written = 0 if options.dry_run else write_inventories(work, plan, cluster, options, ledger,
                                                           overrides_written(work))
    report_unchecked(work)
    return PassResult(plan.revision, [w.result for w in work.values()], mass, written,
                      options.dry_run,
                      ledger.known if keep_inventories and ledger.certain and not options.dry_run
                      else None, ledger.emitted)
