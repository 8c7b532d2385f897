"""What one pass knows of the cluster, read once: the inventories, what Karmada did with the
bundles that have a rollout, how far the syncs with hooks got, the member clusters, and the
errors met while reading. A read error is kept in the view beside what it concerns, so that
the pure planning holds those bundles instead of deciding on what it could not see."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from gitgate.apiserver.ports import ClusterPort, Lister
from gitgate.apply.inventory import Inventory
from gitgate.apply.ledger import read_inventories
from gitgate.apply.members import member_clusters
from gitgate.bundle.selectors import is_propagation, may_select
from gitgate.errors import GitgateError, KubeError
from gitgate.karmada.syncsteps import Progress
from gitgate.model import Manifest, ObjectRef
from gitgate.model.rolloutspec import Members
from gitgate.passes.karmadareads import (
    Observation,
    dispatch_from,
    inventory_refs,
    object_refs,
    progress_from,
    read_karmada,
    unreadable,
)
from gitgate.plan import Plan
from gitgate.progression.hookphases import syncing, watched
from gitgate.progression.suspendtargets import names_clusters


@dataclass(frozen=True)
class ClusterView:
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    dispatch: Observation = field(default_factory=Observation)  # of the rolling bundles
    progress: Mapping[ObjectRef, Progress] = field(default_factory=dict)  # of syncing ones
    progress_error: str = ""  # why `progress` could not be read
    members: Members = field(default_factory=Members)
    requests: int = 0  # list requests this view cost (inventories excluded)


def observe_cluster(cluster: ClusterPort, plan: Plan, instance: str, *,
                    inventories: Mapping[str, Inventory] | None = None,
                    members: Members | None = None) -> ClusterView:
    """Read what `plan` needs of the cluster, once. `inventories`: as read earlier in this
    pass (suspend-first), else read here; a failure to read them raises GitgateError (no
    bundle can be decided without them). Every other read error stays in the view.
    `members`: Karmada's Clusters as read earlier in this pass (for tenants)."""
    if inventories is None:
        inventories = read_inventories(cluster, instance)
    rolling = [in_git(inventories[b.bundle.name], b.bundle.objects, b.policies)
               for b in plan.bundles
               if b.bundle.source.options.rollout and b.bundle.name in inventories]
    with_rollout = any(b.bundle.source.options.rollout for b in plan.bundles)
    steps = syncing(plan)
    objects = watched(plan, steps) if steps else []
    if members is None:
        members = (read_members(cluster) if with_rollout or names_clusters(plan)
                   else Members())
    view = ClusterView(inventories, members=members)
    if not rolling and not objects:
        return view
    refs = {**inventory_refs(rolling), **object_refs(o for o, _ in objects)}
    try:
        read = read_karmada(cluster, refs)
    except GitgateError as exc:
        error = unreadable(exc)
        return ClusterView(inventories, Observation(error=error if rolling else ""),
                           progress_error=error if objects else "", members=view.members)
    dispatch = dispatch_from(cluster, read, rolling) if rolling else Observation()
    return ClusterView(inventories, dispatch, progress_from(read, objects),
                       members=view.members, requests=dispatch.requests or read.requests)


def in_git(inventory: Inventory, objects: Iterable[Manifest],
           policies: Iterable[Manifest] = ()) -> Inventory:
    """What a rollout judges of a bundle: the objects it has live *and* still in Git, and
    those live that its propagation policies (its own in `objects`, and those generated for
    it, `policies`) may still select. An object that left Git is deleted once the rollout
    is out (its delete waits for the last wave); one no policy of the bundle selects any
    more stays where Karmada left it, so its state on a member neither holds a wave back nor
    halts it. One a policy still selects (by name, or by labels: those of a live object are
    not known here) goes to every cluster a wave releases, so it is judged."""
    objects = list(objects)
    keep = {ObjectRef.of(o) for o in objects}
    selecting = [p for p in (*objects, *policies) if is_propagation(p)]
    return replace(inventory, entries=tuple(
        e for e in inventory.entries if e.ref in keep or any(
            may_select(p, e.api_version, e.namespace, e.kind, e.name) for p in selecting)))


def read_members(cluster: Lister) -> Members:
    """The member clusters, so that a cluster in no wave is held back too and label
    selectors can be resolved; a failed read is kept as the reason."""
    try:
        return Members(member_clusters(cluster))
    except KubeError as exc:
        return Members(error=exc.message)
