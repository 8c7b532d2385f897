"""`onFailure: rollback`: a rollout that halts is rolled back by a commit, the way a halt is
committed as a hold gate (`gitgate run --commit-halts`): the bundle's folder restored as
the last revision healthy on every cluster (what `gitgate rollback` picks) together with a
gate that lets exactly the restored content through, so the failed digest stays held until
someone lifts the gate. It never loops: a bundle any active gate covers is not rolled back
again (the rollback's own gate covers it until it is lifted), and one process commits at
most one rollback of a digest."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from gitgate.apiserver.ports import Writer, create
from gitgate.apply.inventory import Inventory
from gitgate.apply.recordformat import event_for
from gitgate.apply.transitions import WARNING, Transition
from gitgate.errors import GitgateError, Reason
from gitgate.gitops.workflow import Committed, GitRepo, rollback, rollback_target
from gitgate.plan import BundlePlan, Plan
from gitgate.status.notify import Message
from gitgate.timespec import rfc3339

log = logging.getLogger("gitgate")
ROLLBACK = "rollback"


@dataclass(frozen=True)
class Due:
    """A halted rollout to roll back: to `revision`, because of `why`."""

    bundle: str
    digest: str  # the content that failed
    revision: str
    why: str


def wants_rollback(item: BundlePlan) -> bool:
    """The bundle's rollout halted and says `onFailure: rollback`."""
    spec = item.bundle.source.options.rollout
    return (spec is not None and spec.on_failure == ROLLBACK and item.rollout is not None
            and item.rollout.halted)


def rollbacks_due(plan: Plan, inventories: Mapping[str, Inventory]
                  ) -> tuple[list[Due], list[tuple[str, str]]]:
    """(what to roll back, (bundle, why not) for the halts that cannot be). Pure."""
    due: list[Due] = []
    refused: list[tuple[str, str]] = []
    for item in plan.bundles:
        if not wants_rollback(item):
            continue
        name = item.bundle.name
        if any(state.active and name in state.covers for state in plan.gates):
            continue  # a gate holds it (the rollback's own, or a person's): never again
        inventory = inventories.get(name)
        if inventory is None:
            refused.append((name, "its record cannot be read"))
            continue
        try:
            revision = rollback_target(list(inventory.history), inventory.applied_revision,
                                       inventory.healthy_revision)
        except GitgateError as exc:
            refused.append((name, exc.message))
            continue
        assert item.rollout is not None  # wants_rollback
        due.append(Due(name, item.verdict.digest, revision, item.rollout.state.halted))
    return due, refused


@dataclass
class RollbackOnFailure:
    """The loop's rollbacks: `repo` gives the checkout to commit in and push from."""

    repo: Callable[[], GitRepo]
    done: set[tuple[str, str]] = field(default_factory=set)  # (bundle, digest) rolled back

    def commit(self, plan: Plan, inventories: Mapping[str, Inventory], now: datetime
               ) -> list[tuple[Due, Committed]]:
        """Commit and push a rollback for each halted rollout due one; what was committed.
        One that cannot be committed (push refused, conflicts) is logged, and its rollout
        stays halted."""
        due, refused = rollbacks_due(plan, inventories)
        for name, why in refused:
            log.warning("cannot roll back the halted rollout of %s: %s; it stays halted", name,
                        why, extra={"event": "rollback", "bundle": name})
        out = []
        for item in due:
            if (item.bundle, item.digest) in self.done:
                continue
            try:
                committed = rollback(self.repo(), item.bundle, item.revision, now, hold=True,
                                     why=item.why)
            except GitgateError as exc:
                log.warning("cannot commit the rollback of %s to %s: %s; it stays halted",
                            item.bundle, item.revision[:12], exc.message,
                            extra={"event": "rollback", "bundle": item.bundle})
                continue
            self.done.add((item.bundle, item.digest))
            log.warning("rolled %s back to %s (%s): %s", item.bundle, item.revision[:12],
                        (committed.sha or "")[:12], item.why,
                        extra={"event": "rollback", "bundle": item.bundle,
                               "commit": committed.sha, "revision": item.revision})
            out.append((item, committed))
        return out


def rollback_message(due: Due, committed: Committed) -> Message:
    """What people are told: which check failed on which cluster (the halt says), and which
    commit rolled back."""
    sha = (committed.sha or "")[:12]
    return Message(f"rollback|{due.bundle}|{due.digest}", f"gitgate: {due.bundle}: rolled back",
                   f"{due.why}\nrolled back to {due.revision[:12]} by commit {sha}; the failed "
                   f"digest {due.digest[:12]} is held until the rollback's gate is lifted",
                   warning=True)


def record_rollback(cluster: Writer, inventories: Mapping[str, Inventory], due: Due,
                    committed: Committed, now: datetime) -> None:
    """A `RolledBack` event on the bundle's Bundle: which check failed on which cluster (the
    halt says), and which commit rolled back. One that cannot be written is said in the log."""
    inventory = inventories.get(due.bundle)
    if inventory is None:
        return
    note = (f"rolled back to {due.revision[:12]} by commit {(committed.sha or '')[:12]}: "
            f"{due.why}")
    try:
        create(cluster, event_for(inventory, "", Transition(WARNING, Reason.ROLLED_BACK,
                                                            "Rollback", note), rfc3339(now)))
    except GitgateError as exc:
        log.warning("cannot record the rollback of %s: %s", due.bundle, exc.message,
                    extra={"event": "event-unrecorded"})
