"""`run --commit-halts`: a halted rollout becomes a hold gate committed to the repo and
pushed (the commit-to-pause workflow, done by gitgate): the halt is seen, reviewed and lifted
in Git like any pause. Lifting that gate continues the wave. With `onFailure: rollback` the
halt is a rollback commit instead (`gitops.failurerollback`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from gitgate.apiserver.ports import Writer
from gitgate.apply.inventory import Inventory
from gitgate.errors import GitgateError
from gitgate.gitops.failurerollback import (
    RollbackOnFailure,
    record_rollback,
    rollback_message,
    wants_rollback,
)
from gitgate.gitops.workflow import GitRepo, pause
from gitgate.plan import Plan
from gitgate.render.tools import Tools
from gitgate.source.git import GitSource
from gitgate.status.notify import Notifier

log = logging.getLogger("gitgate")


def commit_halts(source: GitSource, path: str, tools: Tools, plan: Plan, now: datetime) -> bool:
    """A hold gate committed and pushed for each halted rollout of `plan`. Returns whether
    one was committed (the loop fetches it at once)."""
    committed = False
    for item in plan.bundles:
        if item.rollout is None or not item.rollout.halted or wants_rollback(item):
            continue
        name = item.bundle.name
        repo = GitRepo(source.cache_dir / path, tools, push=True,
                       env=tuple(source.auth.env().items()))
        try:
            source.ensure_identity()
            done = pause(repo, name, f"rollout {item.rollout.waiting_for}", now)
        except GitgateError as exc:
            log.warning("cannot commit the halt of %s: %s", name, exc.message,
                        extra={"event": "commit-halt", "bundle": name})
            continue
        if done.sha:
            log.info("committed a hold gate for the halted rollout of %s (%s)", name,
                     done.sha[:12], extra={"event": "commit-halt", "bundle": name,
                                           "commit": done.sha})
            committed = True
    return committed


def halt_repo(source: GitSource, path: str, tools: Tools) -> GitRepo:
    """The checkout a halt's or a rollback's commit is made in and pushed from."""
    source.ensure_identity()
    return GitRepo(source.cache_dir / path, tools, push=True,
                   env=tuple(source.auth.env().items()))


def commit_rollbacks(rollbacks: RollbackOnFailure, cluster: Writer, notifier: Notifier | None,
                     plan: Plan, inventories: Mapping[str, Inventory], now: datetime) -> bool:
    """`onFailure: rollback` (`gitops.failurerollback`): each committed rollback is recorded
    as an event and told (which check failed, which commit rolled back). Returns whether one
    was committed (the loop fetches it at once)."""
    committed = False
    for due, done in rollbacks.commit(plan, inventories, now):
        record_rollback(cluster, inventories, due, done, now)
        if notifier is not None:
            notifier.offer([rollback_message(due, done)])
        committed = True
    return committed
