"""Whether a `gitgate run` of an instance leads now, as its Leases say: the leader's Lease
(`gitgate-<instance>`) or, under `--shard`, the replicas' Leases. What `reconcile --wait`
reads before it waits for a loop that is not there.

A Lease is taken as held while its holder renewed it within its duration (and a few seconds
more, for the clocks of this machine and the API server); a Lease its holder released (no
holder) or let run out says nobody leads. No Lease at all says nothing: a `run
--no-leader-elect` keeps none."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from gitgate.apiserver.ports import ClusterPort
from gitgate.model.ownership import INSTANCE_LABEL
from gitgate.passes.onepass import SYSTEM_NAMESPACE
from gitgate.passes.replicas import LEASE_API, REPLICA_LABEL, replica_of

CLOCK_SLACK = timedelta(seconds=5)


def leader_lease(instance: str) -> str:
    """The Lease the replicas of `instance` elect their leader with (`run` without --shard)."""
    return f"gitgate-{instance}"


@dataclass(frozen=True)
class Leadership:
    known: bool  # some Lease of the instance exists (else: cannot tell)
    leading: bool  # a replica holds a fresh Lease
    said: str  # the Lease's story, for people

    def nobody(self) -> bool:
        return self.known and not self.leading


def leadership(cluster: ClusterPort, instance: str, now: datetime) -> Leadership:
    """Who leads `instance` now, from its Leases (read, never written)."""
    leases = []
    leader = cluster.get(LEASE_API, "Lease", SYSTEM_NAMESPACE, leader_lease(instance))
    if leader is not None:
        leases.append((leader_lease(instance), leader))
    leases += [(str((lease.get("metadata") or {}).get("name")), lease)
               for lease in cluster.list_objects(
                   LEASE_API, "Lease", SYSTEM_NAMESPACE,
                   f"{INSTANCE_LABEL}={instance},{REPLICA_LABEL}=true")]
    if not leases:
        return Leadership(False, False, f"no Lease of instance {instance} in "
                                        f"{SYSTEM_NAMESPACE}")
    stories = []
    for name, lease in leases:
        replica = replica_of(lease)
        if replica is None:
            stories.append(f"Lease {name} has no holder (its last replica stopped)")
            continue
        if replica.renewed is None:
            stories.append(f"Lease {name} of {replica.identity} was never renewed")
            continue
        ends = replica.renewed + replica.duration + CLOCK_SLACK
        if now < ends:
            return Leadership(True, True, f"{replica.identity} holds Lease {name}")
        stories.append(f"Lease {name} of {replica.identity} ran out "
                       f"{int((now - ends + CLOCK_SLACK).total_seconds())}s ago")
    return Leadership(True, False, "; ".join(stories))
