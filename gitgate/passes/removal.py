"""`gitgate delete BUNDLE` and `gitgate uninstall`: take bundles (or a whole instance) off the
API server, as a pass prunes a bundle that left Git: each object it applied is read first
and deleted only while it is still labelled as that bundle's and its prune is not disabled;
then the bundle's record. What could not be deleted stays in the record, so running the
command again finishes. The mass-prune brake is apply's: deleting more than half of what the
instance manages (or all of it) needs `--allow-mass-prune`. A dry run reads and deletes
nothing.

`uninstall` then removes what the instance keeps beside its records: its Leases (the
leader's and the replicas') and its ConfigMaps in gitgate-system (the overview, provenance,
shard assignment, and records of earlier releases). The Bundle type and the namespace are
shared by every instance and stay."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import prunedecision
from gitgate.apply.inventory import NAMESPACE, Inventory, mass_prune
from gitgate.apply.ledger import Ledger, read_inventories
from gitgate.apply.pruning import prune_gone_bundle
from gitgate.apply.work import ApplyOptions
from gitgate.errors import GitgateError
from gitgate.model.ownership import INSTANCE_LABEL
from gitgate.passes.leading import leader_lease
from gitgate.passes.replicas import LEASE_API, REPLICA_LABEL
from gitgate.timespec import rfc3339


@dataclass
class Removal:
    """What was (or, in a dry run, would be) done, a line each; `failed`: something stays."""

    lines: list[str] = field(default_factory=list)
    failed: bool = False
    blocked: str = ""  # the mass-prune brake held: nothing was deleted


def recorded_bundles(cluster: ClusterPort, instance: str) -> list[Inventory]:
    return list(read_inventories(cluster, instance).values())


def brake(chosen: Sequence[Inventory], every: Sequence[Inventory], allow: bool) -> str:
    """The mass-prune brake's refusal ("" when it lets the removal through)."""
    prunes_count = sum(len(i.entries) for i in chosen)
    managed = sum(len(i.entries) for i in every)
    if allow or not mass_prune(prunes_count, managed):
        return ""
    return (f"this would delete {prunes_count} of the {managed} objects instance "
            f"{chosen[0].instance if chosen else ''} manages (more than half); pass "
            "--allow-mass-prune if that is intended")


def remove_bundles(cluster: ClusterPort, chosen: Sequence[Inventory],
                   every: Sequence[Inventory], *, now: datetime, dry_run: bool,
                   allow_mass_prune: bool) -> Removal:
    """Delete the objects of each chosen bundle, then its record (`every`: all the records
    of the instance, for the brake)."""
    done = Removal(blocked=brake(chosen, every, allow_mass_prune))
    if done.blocked:
        done.failed = True
        return done
    for inventory in chosen:
        if dry_run:
            _dry(cluster, inventory, done)
        else:
            _remove(cluster, inventory, now, done)
    return done


def _dry(cluster: ClusterPort, inventory: Inventory, done: Removal) -> None:
    bundle = inventory.bundle
    for entry in inventory.entries:
        check = prunedecision.precheck(entry) or prunedecision.check_live(
            cluster.get(entry.api_version, entry.kind, entry.namespace, entry.name), bundle,
            lambda live: None, inventory.instance)
        handling = check.outcome.handling
        if handling.deletes:
            done.lines.append(f"would delete {entry.ref} ({bundle})")
        elif handling.shown is not None:
            done.lines.append(f"would leave {entry.ref} ({bundle}): {check.why}")
    done.lines.append(f"would delete the record of {bundle}")


def _remove(cluster: ClusterPort, inventory: Inventory, now: datetime, done: Removal) -> None:
    bundle = inventory.bundle
    options = ApplyOptions(now=now, instance=inventory.instance, allow_mass_prune=True)
    ledger = Ledger({}, now=rfc3339(now))
    try:
        unit = prune_gone_bundle(bundle, inventory, cluster, options, lambda live: None, ledger)
    except GitgateError as exc:
        done.failed = True
        done.lines.append(f"{bundle}: {exc.message}; run the command again")
        return
    result = unit.result
    done.lines += [f"deleted {ref} ({bundle})" for ref in result.pruned]
    done.lines += [f"left {ref} ({bundle}): gitgate.io/prune: disabled" for ref in result.kept]
    done.lines += [f"left {ref} ({bundle}): not labelled as {bundle}'s any more"
                   for ref in result.not_owned]
    if unit.entries:
        done.failed = True
        failed = ", ".join(str(ref) for ref in result.prune_failed) or "some objects"
        done.lines.append(f"kept the record of {bundle}: {failed} could not be deleted "
                          f"({result.message}); run the command again")
    else:
        done.lines.append(f"deleted the record of {bundle}")


def instance_leftovers(cluster: ClusterPort, instance: str) -> list[tuple[str, str, str]]:
    """What the instance keeps beside its Bundles: (apiVersion, kind, name) in gitgate's
    namespace."""
    found: list[tuple[str, str, str]] = []
    if cluster.get(LEASE_API, "Lease", NAMESPACE, leader_lease(instance)) is not None:
        found.append((LEASE_API, "Lease", leader_lease(instance)))
    for lease in cluster.list_objects(LEASE_API, "Lease", NAMESPACE,
                                      f"{INSTANCE_LABEL}={instance},{REPLICA_LABEL}=true"):
        found.append((LEASE_API, "Lease", str(lease["metadata"]["name"])))
    for configmap in cluster.list_objects("v1", "ConfigMap", NAMESPACE,
                                          f"{INSTANCE_LABEL}={instance}"):
        found.append(("v1", "ConfigMap", str(configmap["metadata"]["name"])))
    return found


def remove_leftovers(cluster: ClusterPort, instance: str, *, dry_run: bool,
                     done: Removal) -> None:
    for api_version, kind, name in instance_leftovers(cluster, instance):
        if dry_run:
            done.lines.append(f"would delete {kind} {NAMESPACE}/{name}")
            continue
        try:
            cluster.delete(api_version, kind, NAMESPACE, name)
            done.lines.append(f"deleted {kind} {NAMESPACE}/{name}")
        except GitgateError as exc:
            done.failed = True
            done.lines.append(f"{kind} {NAMESPACE}/{name}: {exc.message}; run the command "
                              "again")
