"""Each replica's Lease under `run --shard`: its name and labels, what it says (`Replica`),
and which peers this replica takes as live by its own sightings of their renewals
(`Sightings`, on its own monotonic clock, never on what a Lease says)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

REPLICA_LABEL = "gitgate.io/replica"  # on each replica's Lease: "true"



ACKNOWLEDGED = "gitgate.io/acknowledged"  # on each replica's Lease: the assignment it acts on



INCARNATION = "gitgate.io/incarnation"  # on each replica's Lease: the process that renewed it



LEASE_API = "coordination.k8s.io/v1"



def lease_name(instance: str, identity: str) -> str:
    tail = re.sub(r"[^a-z0-9-]", "-", identity.lower()).strip("-")[:180] or "replica"
    return f"gitgate-{instance}-replica-{tail}"



def micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")



@dataclass(frozen=True)
class Replica:
    """One replica as its Lease says."""

    identity: str
    renewed: datetime | None
    duration: timedelta
    acknowledged: str
    incarnation: str = ""
    version: str = ""  # the Lease's resourceVersion: changes with any write to it



def replica_of(lease: dict[str, object]) -> Replica | None:
    spec = lease.get("spec") if isinstance(lease.get("spec"), dict) else {}
    meta = lease.get("metadata") if isinstance(lease.get("metadata"), dict) else {}
    assert isinstance(spec, dict) and isinstance(meta, dict)
    identity = spec.get("holderIdentity")
    if not isinstance(identity, str) or not identity:
        return None
    renewed = None
    stamp = spec.get("renewTime")
    if isinstance(stamp, str):
        try:
            renewed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            renewed = None
    seconds = spec.get("leaseDurationSeconds")
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    assert isinstance(annotations, dict)
    return Replica(identity, renewed,
                   timedelta(seconds=seconds if isinstance(seconds, int) else 0),
                   str(annotations.get(ACKNOWLEDGED) or ""),
                   str(annotations.get(INCARNATION) or ""),
                   str(meta.get("resourceVersion") or stamp or ""))



class Sightings:
    """When this replica last saw each peer's Lease change or vanish, on its own monotonic
    clock: the whole of liveness (a Lease's contents are anyone's to write). Pure but for the
    times, which the caller passes."""

    VANISHED = "\x00vanished"

    def __init__(self, longest: float):
        self.longest = longest  # the configured lease duration, in seconds
        self._seen: dict[str, tuple[str, float]] = {}  # identity -> (what was seen, since)

    def live(self, replicas: list[Replica], expected: tuple[str, ...],
             monotonic: float) -> tuple[str, ...]:
        """The identities to take as live: each replica whose Lease this replica saw change, or
        vanish, less than the configured lease duration ago, and each `expected` one (in the
        agreed assignment) it never saw, for a lease duration from now."""
        present = {r.identity for r in replicas}
        for replica in replicas:
            self._note(replica.identity, replica.version, monotonic)
        for identity in (set(self._seen) | set(expected)) - present:
            mark, since = self._seen.get(identity, ("", monotonic))
            if mark != self.VANISHED:  # live when it vanished: waited out from now; else its
                # Lease only went after it was dead (swept): it stays dead
                self._seen[identity] = (self.VANISHED, monotonic if (
                    monotonic - since < self.longest or identity not in self._seen) else since)
        live = tuple(sorted(identity for identity, (_, since) in self._seen.items()
                            if monotonic - since < self.longest))
        for identity in [i for i, (mark, since) in self._seen.items()
                         if mark == self.VANISHED and monotonic - since >= self.longest]:
            del self._seen[identity]  # gone for a lease duration: forgotten
        return live

    def stale(self, monotonic: float, times: float = 2.0) -> set[str]:
        """Peers whose Lease has not changed for `times` lease durations: nobody renews it."""
        return {identity for identity, (mark, since) in self._seen.items()
                if mark != self.VANISHED and monotonic - since >= times * self.longest}

    def _note(self, identity: str, mark: str, monotonic: float) -> None:
        if self._seen.get(identity, ("",))[0] != mark:
            self._seen[identity] = (mark, monotonic)
