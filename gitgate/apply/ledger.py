"""gitgate's own state on the API server: every inventory read with one list, and a `Ledger`
that writes and deletes them and knows, after the pass, what they are (the loop shows status
from it without reading them again)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gitgate.apply.inventory import (
    DEFAULT_INSTANCE,
    NAMESPACE,
    Inventory,
    configmap_name,
    from_configmap,
    system_namespace,
    to_configmap,
)
from gitgate.apply.ports import ClusterPort
from gitgate.model.ownership import INSTANCE_LABEL, INVENTORY_LABEL


def read_inventories(cluster: ClusterPort,
                     instance: str = DEFAULT_INSTANCE) -> dict[str, Inventory]:
    configmaps = cluster.list_objects("v1", "ConfigMap", NAMESPACE,
                              f"{INVENTORY_LABEL}=true,{INSTANCE_LABEL}={instance}")
    inventories = [from_configmap(c) for c in configmaps]
    return {inv.bundle: inv for inv in inventories}


@dataclass
class Ledger:
    """Writes and deletes inventories; with `keep`, also the inventories as this pass leaves
    them (what it read, then each write and delete), for a caller that shows status from them
    instead of reading them again (the loop). Without it nothing is kept: a CLI pass holds no
    second copy of every inventory."""

    known: dict[str, Inventory]
    keep: bool = False
    certain: bool = True

    def write(self, cluster: ClusterPort, inventory: Inventory) -> None:
        try:
            cluster.apply(to_configmap(inventory))
        except BaseException:
            self.certain = False
            raise
        if not self.keep:
            return
        earlier = self.known.get(inventory.bundle)  # `resume`'s own field is not ours to drop
        self.known[inventory.bundle] = replace(inventory, progression=replace(
            inventory.progression, retry=earlier.progression.retry if earlier else ""))

    def delete(self, cluster: ClusterPort, name: str, instance: str) -> None:
        try:
            cluster.delete("v1", "ConfigMap", NAMESPACE, configmap_name(name, instance))
        except BaseException:
            self.certain = False
            raise
        self.known.pop(name, None)


def ensure_system_namespace(cluster: ClusterPort) -> None:
    if cluster.get("v1", "Namespace", "", NAMESPACE) is None:
        cluster.apply(system_namespace())
