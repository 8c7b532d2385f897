"""One reconcile pass, composed in one place: render a checkout -> plan -> apply, scoped to the
bundles a glob selects. The CLI (`plan`, `gates`, `check`, `apply`, `pause`...) and the loop
(`run`) all come through here, so a pass means the same thing everywhere."""

from __future__ import annotations

import fnmatch
import logging
import threading
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from gitgate.apply.engine import (
    ApplyOptions,
    ClusterPort,
    PassResult,
    read_inventories,
    run_pass,
)
from gitgate.apply.freezefirst import suspend_first
from gitgate.apply.inventory import Inventory
from gitgate.apply.members import member_clusters
from gitgate.apply.observe import observe, observe_progress
from gitgate.errors import GitgateError, KubeError
from gitgate.gate.evaluate import gate_states
from gitgate.gate.spec import parse_gates
from gitgate.hookphases import syncing, watched, with_hooks
from gitgate.model import Action, ReasonKind
from gitgate.plan import Plan, make_plan
from gitgate.render.cache import RenderCache
from gitgate.render.pipeline import RepoRender, ScopeOf, render_repo
from gitgate.render.tools import Tools
from gitgate.rollouts import Members, hold_for, with_rollouts
from gitgate.source.config import REPO_CONFIG, parse_repo_config
from gitgate.source.git import revision_of
from gitgate.source.tree import gate_texts, scan_repo

log = logging.getLogger("gitgate")


def matches(name: str, bundle_glob: str | None) -> bool:
    """The `--bundle GLOB` scope: no glob selects every bundle."""
    return bundle_glob is None or fnmatch.fnmatchcase(name, bundle_glob)


@dataclass(frozen=True)
class Checkout:
    """A rendered repo and its plan at one moment."""

    rendered: RepoRender
    plan: Plan


def plan_rendered(rendered: RepoRender, now: datetime, revision: str | None = None) -> Plan:
    """The plan of a rendered repo; `revision` defaults to the checkout's Git HEAD."""
    config = rendered.discovery.config
    texts = gate_texts(rendered.tree, config.gates_path, configured=config.gates_path_configured)
    return make_plan(rendered.rendered, texts, now,
                     revision if revision is not None else revision_of(rendered.root),
                     rendered.problems, rendered.warnings, rendered.memo)


def plan_checkout(root: Path, tools: Tools | None, now: datetime, *,
                  bundle_glob: str | None = None, revision: str | None = None,
                  cache: RenderCache | None = None,
                  scope_of: ScopeOf | None = None) -> Checkout:
    """Render `root` and plan it; with `bundle_glob`, the plan keeps the selected bundles.
    `scope_of` (an API server's discovery) says which kinds the repo does not define are
    namespaced."""
    rendered = render_repo(root, tools, cache=cache, scope_of=scope_of)
    plan = plan_rendered(rendered, now, revision)
    if bundle_glob is not None:
        plan = replace(plan, bundles=tuple(b for b in plan.bundles
                                           if matches(b.bundle.name, bundle_glob)))
    return Checkout(rendered, plan)


def reconcile(root: Path, tools: Tools | None, cluster: ClusterPort, options: ApplyOptions, *,
              bundle_glob: str | None = None, revision: str | None = None,
              cache: RenderCache | None = None,
              stop: threading.Event | None = None) -> tuple[Plan, PassResult]:
    """One pass: render, plan at `options.now`, apply. Bundles outside `bundle_glob` are
    neither written nor taken for bundles that left Git."""
    inventories = None
    if not options.dry_run:
        inventories = suspend_before_rendering(root, cluster, options, bundle_glob)
    checkout = plan_checkout(root, tools, options.now, bundle_glob=bundle_glob,
                             revision=revision, cache=cache, scope_of=cluster.scope_of)
    scope = None if bundle_glob is None else (lambda name: matches(name, bundle_glob))
    plan = hooked(rolled_out(checkout.plan, cluster, options), cluster, options)
    return plan, run_pass(plan, cluster, options, scope=scope, stop=stop,
                          inventories=inventories)


def suspend_before_rendering(root: Path, cluster: ClusterPort, options: ApplyOptions,
                             bundle_glob: str | None = None) -> dict[str, Inventory] | None:
    """Read the gate files alone (no render) and write each active suspension into the live
    policies of the known bundles it covers, so that a freeze lands in the first seconds of a
    pass whatever the renders take (`apply.freezefirst`). Returns the inventories it read
    (the pass uses them: they are not read twice), None when it read none."""
    try:  # two small scans: gitgate.yaml, then the gates folder it names (not the repo)
        config = parse_repo_config(scan_repo(root, (REPO_CONFIG,)).read(REPO_CONFIG))
    except GitgateError:
        return None  # the pass that follows fails on it, naming the file
    tree = scan_repo(root, (config.gates_path,))
    gates, _ = parse_gates(gate_texts(tree, config.gates_path,
                                      configured=config.gates_path_configured))
    states = gate_states([g for g in gates if g.action is Action.SUSPEND], [], options.now)
    if not any(state.active for state in states):
        return None  # the usual pass: no request at all
    inventories = read_inventories(cluster, options.instance)
    early = suspend_first(cluster, {name: inventory for name, inventory in inventories.items()
                                    if matches(name, bundle_glob)}, states)
    for item in early:
        if item.written or item.error:
            log.info("suspended %s before rendering (%s): %s%s", item.bundle,
                     ", ".join(item.gates), ", ".join(str(r) for r in item.written) or "-",
                     f"; failed: {item.error}" if item.error else "",
                     extra={"event": "suspend-first", "bundle": item.bundle})
    return inventories


def rolled_out(plan: Plan, cluster: ClusterPort, options: ApplyOptions) -> Plan:
    """The plan with each rollout's step for this pass, from what Karmada reports of the
    bundles that have one (nothing is read when none has)."""
    if not any(b.bundle.source.options.rollout for b in plan.bundles):
        return plan
    inventories = read_inventories(cluster, options.instance)
    rolling = [inventories[b.bundle.name] for b in plan.bundles
               if b.bundle.source.options.rollout and b.bundle.name in inventories]
    observation = observe(cluster, rolling)
    return with_rollouts(plan, inventories, observation.bundles, options.now,
                         _members(cluster), observation.error)


def hooked(plan: Plan, cluster: ClusterPort, options: ApplyOptions) -> Plan:
    """The plan with each sync step for this pass, for the bundles that have hooks, from how
    far Karmada reports their hooks and templates got (nothing is read when none has)."""
    steps = syncing(plan)
    if not steps:
        return plan
    progress = observe_progress(cluster, watched(plan, steps))
    if isinstance(progress, str):  # a step cannot be decided on what cannot be read
        return replace(plan, bundles=tuple(
            hold_for(item, ReasonKind.UNREADABLE, "hooks",
                     f"cannot read how far the bundle's sync got ({progress}); its hooks "
                     "wait and nothing is written until it can be read")
            if item.bundle.name in steps else item for item in plan.bundles))
    return with_hooks(plan, steps, read_inventories(cluster, options.instance), progress,
                      options.now, options.hook_timeout)


def _members(cluster: ClusterPort) -> Members:
    """The member clusters, so that a cluster in no wave is held back too and label
    selectors can be resolved; a failed read is kept as the reason."""
    try:
        return Members(member_clusters(cluster))
    except KubeError as exc:
        return Members(error=exc.message)
