"""One reconcile pass: suspend first (gate files alone), render a checkout, plan it, observe
the cluster once into a `ClusterView`, plan the pass purely over (plan, view, now), run it.
The CLI (`plan`, `apply`, `apply --wait`) and the loop (`run`) all come through here, so a
pass means the same thing everywhere."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from gitgate.apiserver.changeset import Change
from gitgate.apiserver.fanout import MAX_CONCURRENCY
from gitgate.apiserver.ports import ClusterPort, Lister
from gitgate.apply.engine import run_pass
from gitgate.apply.freezefirst import suspend_first, unrecorded
from gitgate.apply.instanceowner import refuse_other_repo
from gitgate.apply.inventory import Inventory, holders_of, system_namespace
from gitgate.apply.ledger import Ledger, migrate, read_inventories, stored_of
from gitgate.apply.livediff import live_diff
from gitgate.apply.preparation import prepare
from gitgate.apply.recordcache import RecordCache
from gitgate.apply.work import ApplyOptions, PassResult
from gitgate.bundle.summary import summarize
from gitgate.charts.stage import ChartFetcher
from gitgate.errors import GitgateError
from gitgate.gate.evaluate import gate_states
from gitgate.gate.spec import parse_gates
from gitgate.model import Action, ReasonKind, Verdict
from gitgate.model.claims import Holders
from gitgate.model.ownership import DEFAULT_INSTANCE, SYSTEM_NAMESPACE
from gitgate.model.rolloutspec import Members
from gitgate.passes.bundleglob import matches, scope_of_glob, selected
from gitgate.passes.clusterview import ClusterView, observe_cluster, read_members
from gitgate.passes.identities import as_recorded_tenants, as_tenants
from gitgate.plan import Plan, awaited_by, make_plan
from gitgate.progression.analysis import Measure
from gitgate.progression.hookphases import syncing, with_hooks
from gitgate.progression.latefreeze import (
    Identity,
    LateFreezes,
    NewerFreezes,
    identities,
    late_freezes,
    stopped_with,
)
from gitgate.progression.livefreeze import with_live_freezes
from gitgate.progression.livetakeover import with_live_takeovers
from gitgate.progression.rollouts import hold_for, with_rollouts
from gitgate.progression.suspendtargets import with_member_suspensions
from gitgate.render.cache import RenderCache
from gitgate.render.pipeline import RepoRender, render_repo
from gitgate.render.placement import ScopeOf
from gitgate.render.tools import Tools
from gitgate.source.config import REPO_CONFIG, parse_repo_config
from gitgate.source.discover import pause_files, paused_on_disk
from gitgate.source.localgit import revision_of
from gitgate.source.origin import repo_origin
from gitgate.source.tree import gate_texts, scan_repo
from gitgate.timespec import rfc3339

# the pass, and what its callers hand it
__all__ = ["MAX_CONCURRENCY", "SYSTEM_NAMESPACE", "ApplyOptions", "Checkout", "ClusterPort",
           "Pass", "PassResult", "RecordCache", "matches", "plan_checkout",
           "plan_rendered", "planned",
           "preview", "progressed", "read_records", "reconcile", "scope_of_glob", "selected",
           "suspend_before_rendering",
           "system_namespace"]

log = logging.getLogger("gitgate")


@dataclass(frozen=True)
class Checkout:
    """A rendered repo and its plan at one moment."""

    rendered: RepoRender
    plan: Plan
    members: Members | None = None  # Karmada's Clusters, when tenants needed them
    # the Bundle records read before planning (they decide clashes between folders)
    inventories: Mapping[str, Inventory] | None = None


@dataclass(frozen=True)
class Pass:
    """What one pass planned over what it saw, and what it did (None: not run)."""

    plan: Plan
    view: ClusterView
    result: PassResult | None = None


def plan_rendered(rendered: RepoRender, now: datetime, revision: str | None = None,
                  members: Members | None = None,
                  mine: Callable[[str], bool] | None = None,
                  holders: Holders | None = None, instance: str = DEFAULT_INSTANCE) -> Plan:
    """The plan of a rendered repo; `revision` defaults to the checkout's Git HEAD.
    `members`: Karmada's Clusters (None: not read). `mine`: the bundles whose writes are
    worked out (None: all). `holders`: what the Bundle records hold live. `instance`: the
    gitgate that writes it."""
    config = rendered.discovery.config
    texts = gate_texts(rendered.tree, config.gates_path, configured=config.gates_path_configured)
    plan = make_plan(rendered.rendered, texts, now,
                     revision if revision is not None else revision_of(rendered.root),
                     rendered.problems, rendered.warnings, rendered.memo, config.tenancy,
                     members, mine, rendered.scopes, holders, instance)
    return replace(plan, pauses=pause_files(rendered.tree))


def plan_checkout(root: Path, tools: Tools | None, now: datetime, *,
                  bundle_glob: str | None = None, revision: str | None = None,
                  cache: RenderCache | None = None,
                  scope_of: ScopeOf | None = None, clusters: Lister | None = None,
                  shard: Callable[[str], bool] | None = None,
                  inventories: Mapping[str, Inventory] | None = None,
                  charts: ChartFetcher | None = None,
                  instance: str = DEFAULT_INSTANCE) -> Checkout:
    """Render `root` and plan it; with `bundle_glob`, the plan keeps the selected bundles,
    and with `shard` (`run --shard`) those of this replica's shard (maybe none): the other
    replicas' sources are kept as summaries, enough for the rules across bundles.
    `scope_of` (an API server's discovery) says which kinds the repo does not define are
    namespaced; `clusters` is the API server to read Karmada's Clusters from when a tenant
    chooses its clusters by labels (a failed read is kept: their names then fail).
    `inventories`: the Bundle records, read before: an object or a bundle name two folders
    with equal rights claim stays with the one whose record holds it (`model.claims`).
    `charts`: the fetch stage for the charts sources fetch (None: none is fetched).
    `instance`: the gitgate the plan is for (its generated policies' names)."""
    holders = holders_of(inventories.values()) if inventories is not None else None
    rendered = render_repo(root, tools, cache=cache, scope_of=scope_of,
                           mine=None if shard is None else lambda s: shard(s.bundle_name),
                           summarize=None if shard is None else summarize, holders=holders,
                           charts=charts)
    members = (read_members(clusters) if clusters is not None
               and rendered.discovery.config.tenancy.by_labels else None)
    plan = whole = plan_rendered(rendered, now, revision, members, shard, holders, instance)
    everything = {b.bundle.name for b in plan.bundles}
    if bundle_glob is not None:
        chosen = set(selected([b.bundle.name for b in plan.bundles], bundle_glob))
        plan = replace(plan, bundles=tuple(b for b in plan.bundles if b.bundle.name in chosen))
    if shard is not None:
        plan = replace(plan, bundles=tuple(b for b in plan.bundles if shard(b.bundle.name)))
    kept = {b.bundle.name for b in plan.bundles}
    elsewhere = frozenset(everything - kept)
    outside = tuple(b for b in whole.bundles if b.bundle.name in elsewhere
                    and b.verdict.verdict in (Verdict.HELD, Verdict.SUSPENDED))
    needs = {b.bundle.name: b.bundle.source.options.depends_on for b in whole.bundles}
    awaited = awaited_by(needs, elsewhere, kept) if shard is not None else frozenset()
    return Checkout(rendered, replace(plan, elsewhere=elsewhere, awaited=awaited,
                                      outside=outside), members, inventories)


def progressed(plan: Plan, view: ClusterView, now: datetime, hook_timeout: timedelta,
               measure: Measure | None = None) -> Plan:
    """The plan with each rollout's and each sync's step for this pass, decided on what the
    view saw (pure). What the view could not read holds the bundles it concerns. A freeze
    binds to what is live first (`progression.livefreeze`)."""
    plan = with_live_freezes(plan, view.inventories, plan.pauses)
    plan = with_live_takeovers(plan, view.inventories)
    plan = with_member_suspensions(plan, view.members)
    plan = with_rollouts(plan, view.inventories, view.dispatch.bundles, now, view.members,
                         view.dispatch.error, measure)
    steps = syncing(plan)
    if not steps:
        return plan
    if view.progress_error:  # a step cannot be decided on what cannot be read
        return replace(plan, bundles=tuple(
            hold_for(item, ReasonKind.UNREADABLE, "hooks",
                     f"cannot read how far the bundle's sync got ({view.progress_error}); its "
                     "hooks wait and nothing is written until it can be read")
            if item.bundle.name in steps else item for item in plan.bundles))
    return with_hooks(plan, steps, view.inventories, view.progress, now, hook_timeout)


def planned(checkout: Checkout, cluster: ClusterPort, options: ApplyOptions,
            inventories: Mapping[str, Inventory] | None = None) -> Pass:
    """The pass `checkout` would run now: its plan over one view of the cluster."""
    view = observe_cluster(cluster, checkout.plan, options.instance,
                           inventories=inventories if inventories is not None
                           else checkout.inventories, members=checkout.members)
    return Pass(progressed(checkout.plan, view, options.now, options.hook_timeout,
                           options.measure), view)


def with_origin(options: ApplyOptions, root: Path) -> ApplyOptions:
    """The options with the origin of the folder a pass applies (`source.origin`), unless
    the caller set one."""
    return options if options.origin.known else replace(options, origin=repo_origin(root))


def preview(checkout: Checkout, cluster: ClusterPort, options: ApplyOptions,
            bundle_glob: str | None = None) -> tuple[Pass, list[Change]]:
    """`plan --kubeconfig`: the pass and what it would change, object by object (dry-run
    applies, the one prune decision), nothing written; a tenant's objects are read and
    tried as the tenant, as the pass would write them. Refused, as the pass would be, over
    an instance another repo owns (OtherRepo), unless `options.adopt`."""
    options = with_origin(options, checkout.rendered.root)
    seen = planned(checkout, cluster, options)
    refuse_other_repo(seen.view.inventories, options.origin, options.instance, options.adopt)
    reader = as_tenants(cluster, seen.plan, seen.view.inventories,
                        checkout.rendered.discovery.config.tenancy)
    return seen, live_diff(seen.plan, reader, options, seen.view.inventories,
                           scope_of_glob(bundle_glob))


def read_records(cluster: ClusterPort, instance: str) -> dict[str, Inventory]:
    """The Bundle records of `instance` (raises GitgateError when they cannot be read)."""
    return read_inventories(cluster, instance)


def reconcile(root: Path, tools: Tools | None, cluster: ClusterPort, options: ApplyOptions, *,
              bundle_glob: str | None = None, revision: str | None = None,
              cache: RenderCache | None = None,
              stop: threading.Event | None = None, keep_inventories: bool = False,
              migrate_records: bool = True,
              shard: Callable[[str], bool] | None = None,
              late: Callable[[], NewerFreezes | None] | None = None,
              charts: ChartFetcher | None = None,
              records: RecordCache | None = None) -> Pass:
    """One pass: suspend first, render, plan at `options.now`, observe, apply. Bundles outside
    `bundle_glob` are neither written nor taken for bundles that left Git. With
    `keep_inventories`, the result carries the inventories as the pass left them. With
    `migrate_records`, records an earlier release kept in ConfigMaps become Bundles first
    (the loop asks until one pass found none). With `shard`, only the bundles it says are
    this replica's are written, suspended first or taken for gone. `late`: the freezes a
    newer commit adds, as the caller last learned them (None: none); asked before each write
    and delete, so a freeze pushed while the pass writes stops what it covers. `records`: the
    loop's records' cache (None: the records are read afresh)."""
    scope = scope_of_glob(bundle_glob)
    if shard is not None:
        scope = shard if scope is None else (lambda name, glob=scope: glob(name) and shard(name))
    options = with_origin(options, root)
    inventories = None
    if not options.dry_run and migrate_records:
        moved = migrate(cluster, options.instance, rfc3339(options.now), records)
        if moved:
            log.info("moved %d bundle record(s) from ConfigMaps to Bundle objects", moved,
                     extra={"event": "migrated", "count": moved})
    if not options.dry_run:
        inventories = suspend_before_rendering(root, cluster, options, bundle_glob, shard,
                                               records)
    if inventories is None:
        inventories = read_inventories(cluster, options.instance, records)
    checkout = plan_checkout(root, tools, options.now, bundle_glob=bundle_glob,
                             revision=revision, cache=cache, scope_of=cluster.scope_of,
                             clusters=cluster, shard=shard, inventories=inventories,
                             charts=charts, instance=options.instance)
    seen = planned(checkout, cluster, options, inventories)
    if late is not None:
        options = replace(options, late_freeze=stopped_by(late, seen.plan, options.now,
                                                          identities(seen.plan,
                                                                     seen.view.inventories)))
    writer = as_tenants(cluster, seen.plan, seen.view.inventories,
                        checkout.rendered.discovery.config.tenancy)
    first, rest = awaited_first(seen.plan, options, seen.view.inventories)
    if first is None:
        result = _run_pass(seen.plan, writer, options, records, dict(seen.view.inventories),
                           scope=scope, stop=stop, keep_inventories=keep_inventories)
        return replace(seen, result=result)
    # what another replica waits for goes out, records included, before the rest of the pass
    awaited = frozenset(b.bundle.name for b in first.bundles)
    early = _run_pass(first, writer, options, records, dict(seen.view.inventories),
                      scope=awaited.__contains__, stop=stop, keep_inventories=True)
    then = _run_pass(rest, writer, options, records,
                     None if early.inventories is None else dict(early.inventories),
                     scope=lambda name: (name not in awaited and (scope is None or scope(name))),
                     stop=stop, keep_inventories=keep_inventories)
    return replace(seen, result=joined(early, then))


def _run_pass(plan: Plan, cluster: ClusterPort, options: ApplyOptions,
              records: RecordCache | None, inventories: dict[str, Inventory] | None, *,
              scope: Callable[[str], bool] | None, stop: threading.Event | None,
              keep_inventories: bool) -> PassResult:
    """The engine over one `Ledger` of the records (`inventories`: as read earlier in this
    pass, else read here)."""
    if inventories is None:
        inventories = read_inventories(cluster, options.instance, records)
    ledger = Ledger(dict(inventories) if keep_inventories else {}, keep_inventories,
                    stored=stored_of(inventories), now=rfc3339(options.now),
                    origin=options.origin, cache=records)
    return run_pass(plan, cluster, options, ledger, inventories, scope=scope, stop=stop,
                    keep_inventories=keep_inventories)


def stopped_by(late: Callable[[], NewerFreezes | None], plan: Plan, now: datetime,
               who: Mapping[str, Identity]) -> Callable[[str], str | None]:
    """The pass's check before each write: whether the freezes of the newer commit `late`
    reports now (beyond those `plan` has) cover a bundle, or a bundle it acts on or whose
    workloads use its objects; worked out once per newer commit and once per bundle."""
    known: dict[tuple[str, str], str | None] = {}
    worked: dict[str, LateFreezes] = {}
    related: dict[str, tuple[str, ...]] = {}

    def check(name: str) -> str | None:
        newer = late()
        if newer is None or name not in who:
            return None
        key = (newer.revision, name)
        if key not in known:
            freezes = worked.get(newer.revision)
            if freezes is None:
                freezes = worked[newer.revision] = late_freezes(newer, plan, now)
                if not related:
                    related.update(stopped_with(plan))
            found = None
            for other in (name, *related.get(name, ())):
                why = freezes.stops(who[other]) if other in who else None
                if why is not None:
                    found = f"{why.where()}: {why.reason}" + (
                        "" if other == name else f" (it covers {other}, which this bundle "
                        "acts on or whose workloads use it)") + f", in {newer.revision[:12]}"
                    break
            known[key] = found
        return known[key]

    return check


def awaited_first(plan: Plan, options: ApplyOptions, inventories: Mapping[str, Inventory]
                  ) -> tuple[Plan | None, Plan]:
    """A sharded plan cut in two when another replica's bundles wait for some of this one's
    (`Plan.awaited`): those first, each seeing the rest as written elsewhere, then the rest
    (which sees them recorded). Not cut on a dry run, when they are the whole plan, when one
    of them acts on a bundle of the rest (an override waits for that bundle's suspension,
    which the rest writes), or when one of them has objects to prune (`inventories`: the
    records): the mass-prune brake weighs a pass's prunes together, and the first part
    would prune before the rest could be weighed."""
    awaited = plan.awaited
    rest_names = {b.bundle.name for b in plan.bundles} - awaited
    if options.dry_run or not awaited or not rest_names or any(
            target in rest_names for b in plan.bundles if b.bundle.name in awaited
            for _, targets in b.bundle.acts_on for target in targets):
        return None, plan
    first = replace(plan, bundles=tuple(b for b in plan.bundles if b.bundle.name in awaited),
                    elsewhere=plan.elsewhere | rest_names, awaited=frozenset())
    _, work = prepare(first, dict(inventories), options)
    if any(unit.diff is not None and unit.diff.to_prune for unit in work.values()):
        return None, plan
    return first, replace(plan, bundles=tuple(b for b in plan.bundles
                                              if b.bundle.name not in awaited),
                          elsewhere=plan.elsewhere | awaited, awaited=frozenset())


def joined(early: PassResult, late: PassResult) -> PassResult:
    """One pass's result of its two parts."""
    return PassResult(late.revision, early.bundles + late.bundles,
                      early.prune_blocked or late.prune_blocked,
                      early.inventories_written + late.inventories_written, late.dry_run,
                      late.inventories if early.inventories is not None else None,
                      early.transitions + late.transitions)


def suspend_before_rendering(root: Path, cluster: ClusterPort, options: ApplyOptions,
                             bundle_glob: str | None = None,
                             shard: Callable[[str], bool] | None = None,
                             records: RecordCache | None = None
                             ) -> dict[str, Inventory] | None:
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
    states = gate_states(gates, [], options.now)
    if not any(state.active and state.gate.action is Action.SUSPEND for state in states):
        return None  # the usual pass: no request at all
    inventories = read_inventories(cluster, options.instance, records)
    refuse_other_repo(inventories, options.origin, options.instance, options.adopt)
    chosen = {name: inventory for name, inventory in inventories.items()
              if matches(name, bundle_glob) and (shard is None or shard(name))}
    paused = {name for name, inventory in chosen.items()  # held where it is live from
              if inventory.source and paused_on_disk(root, inventory.source)}
    early = suspend_first(as_recorded_tenants(cluster, chosen.values(), config.tenancy),
                          chosen, states, paused)
    for item in early:
        if item.written or item.error:
            log.info("suspended %s before rendering (%s): %s%s", item.bundle,
                     ", ".join(item.gates), ", ".join(str(r) for r in item.written) or "-",
                     f"; failed: {item.error}" if item.error else "",
                     extra={"event": "suspend-first", "bundle": item.bundle})
    return unrecorded(inventories, early)
