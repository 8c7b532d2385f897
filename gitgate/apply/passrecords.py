"""What a pass records at its end: each bundle's inventory (written only when something
changed), its rollout and sync state, the clusters that run old overrides, and a failed hook
reported as the bundle's failure."""

from __future__ import annotations

import logging
from dataclasses import replace

from gitgate.apiserver.fanout import fan_out
from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import overrides
from gitgate.apply.inventory import HISTORY_LIMIT, Entry, Inventory, entry_for, history_entry
from gitgate.apply.liverevision import Live, after_write
from gitgate.apply.recordedreason import RecordedReason
from gitgate.apply.transitions import Transition, transitions
from gitgate.apply.work import ApplyOptions, BundleWork, RecordStore
from gitgate.bundle.reach import acting_ref
from gitgate.bundle.selectors import OVERRIDE_KINDS
from gitgate.errors import GitgateError, Reason
from gitgate.karmada.policy import suspension_for
from gitgate.model import ObjectRef, Verdict
from gitgate.plan import Plan
from gitgate.progression.record import Progression
from gitgate.timespec import rfc3339

log = logging.getLogger("gitgate")


def _suspended(unit: BundleWork) -> tuple[str, ...] | None:
    """The clusters the unit's verdict suspends ("*": all), None when none."""
    wanted = suspension_for(unit.plan.verdict) if unit.plan is not None else None
    if wanted is None:
        return None
    if wanted.get("dispatching"):
        return ("*",)
    return tuple(wanted["dispatchingOnClusters"]["clusterNames"])


def overrides_written(work: dict[str, BundleWork]) -> dict[str, tuple[str, ...]]:
    """Per bundle, the clusters it kept suspended while this pass wrote an override acting
    on it (its own generated ones, or one from another folder): they run the old one."""
    out: dict[str, set[str]] = {}
    for unit in work.values():
        if unit.plan is None:
            continue
        written = set(unit.result.applied)
        acts_on = dict(unit.plan.bundle.acts_on)
        for ref in written:
            targets = acts_on.get(ref, ())
            if ref.group == "policy.karmada.io" and ref.kind in OVERRIDE_KINDS:
                targets = (*targets, unit.result.bundle)
            for target in targets:
                clusters = _suspended(work[target]) if target in work else None
                if clusters:
                    out.setdefault(target, set()).update(clusters)
    return {name: tuple(sorted(clusters)) for name, clusters in out.items()}


def _identity(unit: BundleWork, state: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The folder and labels a bundle is live under: the commit's once it is written (applied,
    or suspended by a freeze of its current identity); while it is held or failed, or a
    freeze covers it only as it is live, those it was last written under (a freeze that
    covers them keeps covering it: `progression.livefreeze`)."""
    assert unit.plan is not None
    previous = unit.previous
    if previous is not None and previous.source and (
            state in (Verdict.HELD, Verdict.FAILED) or unit.plan.verdict.by_live_identity):
        return previous.source, previous.labels
    return unit.plan.bundle.source.path, tuple(sorted(unit.plan.bundle.labels.items()))


def write_inventories(work: dict[str, BundleWork], plan: Plan, cluster: ClusterPort,
                       options: ApplyOptions, ledger: RecordStore,
                       behind: dict[str, tuple[str, ...]] | None = None) -> int:
    now = rfc3339(options.now)
    changed: list[Inventory] = []
    # what a bundle wrote in this pass is its own: another record that lists it (a bundle
    # that failed or waited, so did not write its record) gives it up where that bundle
    # renders and no longer has it in Git, records staying disjoint
    # (`pruning.release_taken`; one that failed to render may still have it)
    taken = {ref: name for name, unit in work.items() if unit.plan is not None
             for ref in unit.result.applied}
    events: dict[str, list[Transition]] = {}
    acted_on: set[str] = set()
    for name, unit in work.items():
        if unit.plan is None:
            continue
        verdict = unit.plan.verdict
        previous = unit.previous
        state = str(Verdict.FAILED if unit.result.failed else verdict.verdict)
        all_applied = (unit.diff is not None and unit.resync and not unit.result.failed)
        live = _live_record(unit, plan.revision)
        source, labels = _identity(unit, state)
        inventory = Inventory(
            bundle=name,
            entries=_entries(unit, taken),
            revision=plan.revision, digest=verdict.digest, verdict=state,
            reasons=tuple(RecordedReason.of_hold(r) for r in verdict.reasons),
            message=(f"{unit.result.reason}: {unit.result.message}" if unit.result.message
                     else unit.result.reason or Reason.APPLIED),
            since=previous.since if previous and previous.verdict == state else now,
            last_applied=now if unit.wrote else (previous.last_applied if previous else ""),
            last_full_apply=now if all_applied else (previous.last_full_apply
                                                     if previous else ""),
            instance=options.instance, source=source, labels=labels,
            origin=options.origin if options.origin.known or previous is None
            else previous.origin,
            progression=Progression(_rollout_record(unit, options),
                                    _hooks_record(unit, options)),
            overrides_behind=_behind_record(unit, (behind or {}).get(name)),
            applied_revision=live.revision, applied_digest=live.digest,
            clusters_behind=live.behind,
            history=_history(unit, live, plan.revision, verdict.digest, now, options.actor),
            healthy_revision=previous.healthy_revision if previous else "")
        if previous is not None and previous.status_key() == inventory.status_key() and not (
                all_applied and not options.dry_run) and previous.origin == inventory.origin:
            continue  # a finished resync is recorded even when everything was in place, and
            # a record that names another origin (or none, written by an earlier release) is
            # written with this pass's
        changed.append(inventory)
        if (unit.wrote or unit.result.pruned or unit.result.failed or previous is None
                or previous.verdict != state):
            acted_on.add(name)
        events[name] = transitions(previous, inventory, pruned=len(unit.result.pruned),
                                   failed_reason=unit.result.reason if unit.result.failed
                                   else "")
    if not changed:
        return 0
    # first the records of what the pass did (objects written or pruned, a new verdict, a
    # failure), then those that only follow the new revision: a commit rewrites every
    # bundle's status (5,000 writes at 5,000 bundles), and the record of the change it
    # brings, which `status`, the web page and a takeover wait for, should not queue
    # behind them
    changed.sort(key=lambda inventory: inventory.bundle not in acted_on)
    ledger.ensure_home(cluster)
    moved = options.share_moved

    def write(inventory: Inventory) -> bool:
        if moved is not None and inventory.bundle not in acted_on and moved():
            return False  # the pass over the new share writes it (`ApplyOptions`)
        ledger.write(cluster, inventory, events.get(inventory.bundle, ()))
        return True

    written = 0
    for answer in fan_out(write, changed, options.concurrency):
        if isinstance(answer, GitgateError):
            raise answer
        written += answer
    if written < len(changed):
        log.info("shard: the assignment moved during the pass; %d record(s) that only follow "
                 "the new revision are left to the pass over the new share",
                 len(changed) - written, extra={"event": "records-deferred",
                                                "count": len(changed) - written})
    return written


def _entries(unit: BundleWork, taken: dict[ObjectRef, str]) -> tuple[Entry, ...]:
    """The unit's entries in order, but those another bundle wrote in this pass (`taken`)
    and this one, rendered, no longer has; each saying what a freeze needs of its object
    where the plan renders it with the content recorded (so what is live): its labels and
    uses (a record of an earlier release lacks them), and for an acting object the other
    bundles it acts on."""
    name = unit.result.bundle
    rendered_now = (None if unit.plan is None or unit.plan.bundle.failed
                    else set(unit.plan.bundle.object_refs))
    entries = [unit.entries[r] for r in sorted(unit.entries)
               if taken.get(r, name) == name or rendered_now is None or r in rendered_now]
    if unit.plan is None:
        return tuple(entries)
    acting = dict(unit.plan.bundle.acts_on)

    def stale(entry: Entry) -> bool:
        return bool(entry.hash) and (entry.labels is None or (
            acting_ref(entry.ref) and entry.acts != acting.get(entry.ref, ())))

    if not any(stale(e) for e in entries):
        return tuple(entries)
    rendered = {h.ref: h for h in unit.plan.written}
    out = []
    for entry in entries:
        found = rendered.get(entry.ref) if stale(entry) else None
        if found is not None and found.hash == entry.hash:
            entry = entry_for(found)
            if acting_ref(entry.ref):
                entry = replace(entry, acts=acting.get(entry.ref, ()))
        out.append(entry)
    return tuple(out)


def _history(unit: BundleWork, live: Live, revision: str, digest: str, now: str,
             actor: str) -> tuple[dict[str, str], ...]:
    """The bundle's last applies, with this pass's when it changed what is live (applied) or
    failed to apply a revision (failed: its reason), once per content and outcome."""
    previous = unit.previous
    kept = previous.history if previous else ()
    if unit.diff is None:
        return kept  # held: nothing was tried
    if unit.result.failed:
        outcome = f"failed: {unit.result.reason or Reason.FAILED}"
    elif previous is None or (live.revision, live.digest) != (
            previous.applied_revision, previous.applied_digest):
        outcome = "applied" + (f" (not yet on {', '.join(c for c, _ in live.behind)})"
                               if live.behind else "")
    else:
        return kept
    if kept and (kept[-1].get("revision"), kept[-1].get("digest"), kept[-1].get("outcome")) == (
            revision, digest, outcome):
        return kept
    return (*kept, history_entry(revision, digest, now, outcome, actor))[-HISTORY_LIMIT:]


def _live_record(unit: BundleWork, revision: str) -> Live:
    """What is live once this pass is done: moved on only when it wrote the bundle's
    templates without failing (an open bundle, suspended clusters included)."""
    previous = unit.previous
    before = Live(previous.applied_revision, previous.applied_digest,
                  previous.clusters_behind) if previous else Live()
    if unit.plan is None or unit.diff is None or unit.result.failed:
        return before
    return after_write(before, revision, unit.plan.verdict.digest, _suspended(unit))


def _behind_record(unit: BundleWork, written_while: tuple[str, ...] | None) -> tuple[str, ...]:
    """Which clusters still run old overrides: those kept suspended while one changed, until
    a pass lifts their suspension (a held or failed pass changes no suspension)."""
    previous = unit.previous.overrides_behind if unit.previous else ()
    if unit.result.failed or unit.diff is None:
        return tuple(sorted(set(previous) | set(written_while or ())))
    return overrides.still_behind(previous, written_while, _suspended(unit))


def report_hooks(work: dict[str, BundleWork]) -> None:
    """A bundle whose sync stopped at a failed hook fails with `HookFailed` (its earlier
    writes, SyncFail hooks included, went through); one still syncing says what it waits
    for."""
    for unit in work.values():
        step = unit.plan.hooks if unit.plan is not None else None
        if step is None or unit.result.failed or unit.diff is None:
            continue
        if step.failed:
            unit.result.fail(Reason.HOOK_FAILED, step.failed)
        elif step.next_check is not None:
            unit.result.message = f"syncing: {step.waiting_for}"


def _hooks_record(unit: BundleWork, options: ApplyOptions) -> str:
    """The sync's new state once its writes went through (a failed hook is a state too);
    the previous one otherwise."""
    previous = unit.previous.progression.hooks if unit.previous else ""
    step = unit.plan.hooks if unit.plan is not None else None
    if step is None or options.dry_run or (
            unit.result.failed and unit.result.reason != Reason.HOOK_FAILED):
        return previous
    return step.state.to_json()


def _rollout_record(unit: BundleWork, options: ApplyOptions) -> str:
    """The rollout's new state once its writes went through; the previous one otherwise (a
    failed or dry-run pass moves no rollout on)."""
    previous = unit.previous.progression.rollout if unit.previous else ""
    if unit.plan is None or unit.plan.rollout is None or unit.result.failed or options.dry_run:
        return previous
    return unit.plan.rollout.state.to_json()
