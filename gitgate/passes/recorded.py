"""What the CLI reads and asks of gitgate's recorded state outside a pass: the status of
every bundle (its inventory and what Karmada did with it), the retry of halted rollouts
(`resume`), and Karmada's member clusters (`pause --clusters`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gitgate.apply.inventory import DEFAULT_INSTANCE, NAMESPACE, Inventory, retry_request
from gitgate.apply.ledger import read_inventories
from gitgate.apply.members import member_clusters
from gitgate.apply.observe import Observation, observe
from gitgate.apply.ports import ClusterPort, Lister
from gitgate.model.ownership import INSTANCE_LABEL, INVENTORY_LABEL
from gitgate.progression.rollouts import halted_rollouts
from gitgate.timespec import rfc3339

RESUME_MANAGER = "gitgate-resume"


@dataclass(frozen=True)
class Recorded:
    inventories: list[Inventory]
    observation: Observation


def recorded_status(cluster: ClusterPort, instance: str) -> Recorded:
    """Every bundle's inventory and what Karmada did with it (an unreadable Karmada is the
    observation's error; unreadable inventories raise GitgateError)."""
    inventories = list(read_inventories(cluster, instance).values())
    return Recorded(inventories, observe(cluster, inventories))


def recorded_instances(cluster: Lister) -> list[str]:
    """The gitgate instances that recorded bundles on this API server (by their label)."""
    found = cluster.list_objects("v1", "ConfigMap", NAMESPACE, f"{INVENTORY_LABEL}=true")
    return sorted({(c["metadata"].get("labels") or {}).get(INSTANCE_LABEL, DEFAULT_INSTANCE)
                   for c in found})


def retry_halted(cluster: ClusterPort, instance: str, names: list[str], now: datetime,
                 dry_run: bool) -> list[str]:
    """Ask the halted rollouts of `names` to try their wave again: one field in each
    inventory, under its own field manager (a running loop's writes leave it alone); the next
    pass restarts the wave's timers. Returns a line per rollout asked."""
    halted = halted_rollouts(read_inventories(cluster, instance), names)
    for inventory, _ in halted:
        if not dry_run:
            cluster.apply(retry_request(inventory, rfc3339(now)), manager=RESUME_MANAGER)
    return [f"retry the halted rollout of {inventory.bundle} at wave {state.wave + 1} "
            f"(halted: {state.halted})" for inventory, state in halted]


def member_names(cluster: Lister) -> frozenset[str]:
    """Karmada's member clusters. Raises KubeError (404: not a Karmada control plane)."""
    return frozenset(member_clusters(cluster))
