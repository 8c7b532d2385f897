"""A suspended bundle's templates are written only once Karmada shows the suspension on
their bindings; an override aimed at a bundle whose suspension does not hold is left out of
the pass (its writer fails, and the next pass sends it)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import overrides, stages, suspension, takeover
from gitgate.apply.work import ApplyOptions, BundleWork
from gitgate.errors import Reason
from gitgate.karmada.policy import is_policy
from gitgate.model import Manifest, ObjectRef


def _needs_confirmation(staged: dict[int, list[Manifest]]) -> bool:
    """Templates (or override policies) are still to be written after the suspension."""
    return any(staged[s] for s in (stages.STAGE_SUSPENDED_CRDS, stages.STAGE_CLUSTER,
                                   stages.STAGE_NAMESPACED)) or any(
        not is_policy(o) for o in staged[stages.STAGE_POLICIES])


def confirm_suspensions(work: dict[str, BundleWork], staged: dict[str, dict[int, list[Manifest]]],
                         cluster: ClusterPort, options: ApplyOptions,
                         stop: threading.Event | None,
                         giving: Mapping[str, takeover.Giver]) -> dict[str, str]:
    """Wait for Karmada to show each suspension written in this pass, where templates (or
    override policies from other bundles) are still to be written; a template a bundle takes
    over from one of the `giving` bundles is let go of by its policy first (`takeover`). Returns the
    bundles whose suspension does not hold, and why; overrides aimed at them are left out of
    the pass."""
    writes = overrides.override_writes(
        {n: u.plan.bundle for n, u in work.items() if u.plan is not None},
        {n: [o for objects in stages_.values() for o in objects]
         for n, stages_ in staged.items()})
    aimed = {target for write in writes for target in write.targets}
    wanted = {name: (unit.steps.first, unit.steps.templates) for name, unit in work.items()
              if unit.steps is not None and not unit.result.failed
              and (_needs_confirmation(staged[name]) or name in aimed)}
    if not options.dry_run:
        # every bundle about to write a template another bundle's policy claims: that policy
        # lets go of it first, so it is never dispatched where the bundle does not place it
        takers = {name for name, unit in work.items() if unit.diff is not None
                  and not unit.result.failed and name in staged}
        takeover.let_go(giving, takeover.taken_over(work, staged, takers, giving),
                        cluster, options)
    if not options.dry_run and wanted:
        _await_suspensions(work, wanted, cluster, options, stop)
    unsafe = {name: f"its suspension was not confirmed: {work[name].result.reason}"
              for name in aimed if name in work and work[name].steps is not None
              and work[name].result.failed}
    if options.dry_run:
        return {}
    for writer, why in overrides.blocked(writes, unsafe).items():
        _leave_out(work[writer], staged[writer], {
            w.ref for w in writes if w.writer == writer and any(t in unsafe for t in w.targets)})
        work[writer].blocked += why
    return unsafe


def _leave_out(unit: BundleWork, staged: dict[int, list[Manifest]], refs: set[ObjectRef]) -> None:
    """Take `refs` out of the unit's writes; their inventory entries say "not written", so
    that the next pass sends them again."""
    for stage, objects in staged.items():
        staged[stage] = [o for o in objects if ObjectRef.of(o) not in refs]
    for ref in refs:
        known = unit.previous.by_ref().get(ref) if unit.previous else None
        if known is not None:
            unit.entries[ref] = known
        elif ref in unit.entries:
            unit.entries[ref] = replace(unit.entries[ref], hash="")


def _await_suspensions(work: dict[str, BundleWork],
                       wanted: dict[str, tuple[Manifest, tuple[Manifest, ...]]],
                       cluster: ClusterPort, options: ApplyOptions,
                       stop: threading.Event | None) -> None:
    timeout = options.suspension_timeout.total_seconds()
    confirmation = suspension.await_suspension(cluster, wanted, timeout, stop)
    for name, lags in confirmation.lagging.items():
        if not lags:
            continue
        if confirmation.interrupted:
            work[name].result.fail(Reason.INTERRUPTED,
                                   "stopping before Karmada confirmed the suspension")
        else:
            work[name].result.fail(Reason.SUSPENSION_NOT_OBSERVED,
                                   suspension.describe(lags, timeout))
