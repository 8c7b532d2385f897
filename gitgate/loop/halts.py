"""`run --commit-halts`: a halted rollout becomes a hold gate committed to the repo and
pushed (the commit-to-pause workflow, done by gitgate): the halt is seen, reviewed and lifted
in Git like any pause. Lifting that gate continues the wave."""

from __future__ import annotations

import logging
from datetime import datetime

from gitgate.errors import GitgateError
from gitgate.gitops.workflow import GitRepo, pause
from gitgate.plan import Plan
from gitgate.render.tools import Tools
from gitgate.source.git import GitSource

log = logging.getLogger("gitgate")


def commit_halts(source: GitSource, path: str, tools: Tools, plan: Plan, now: datetime) -> bool:
    """A hold gate committed and pushed for each halted rollout of `plan`. Returns whether
    one was committed (the loop fetches it at once)."""
    committed = False
    for item in plan.bundles:
        if item.rollout is None or not item.rollout.halted:
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
