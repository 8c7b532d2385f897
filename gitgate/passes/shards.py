"""`gitgate run --shard`: every replica reconciles a share of the bundles. The replicas find
each other through Leases on the Karmada API server, one per replica
(`gitgate-<instance>-replica-<identity>` in gitgate-system, renewed every retry period), and
agree on an assignment: the live replicas, recorded in `gitgate.shards` (any replica that sees
the live set differ from it writes the new one; the content is a function of the live set, so
they all write the same). Each bundle goes to one member by rendezvous hashing
(`model.shardmap`).

A replica acts on an assignment only once every live replica has acknowledged it (an
annotation on its Lease, written at the start of a tick, between passes): a replica that
acknowledges a new assignment has finished every pass under the old one, so no two replicas
ever act on different assignments at once. A replica whose Lease ran out is not waited for:
its fence (`passes.fencing`) stopped its writes before the Lease expired.

What a replica takes as live rests on what it observed itself, on its own monotonic clock,
never on what a Lease says: anyone who may write Leases can write any renewal time, duration,
holder or annotation into one, or delete it. A peer is live until one configured lease
duration has passed since this replica last saw its Lease change in any way (a new
resourceVersion) or vanish. So a tampered Lease can only keep a peer live longer (a stall),
never end it early: the peer's own fence (`passes.fencing`, renew deadline < lease duration)
has stopped its writes before anyone takes its bundles. A clean stop deletes its Lease; the
others take its bundles one lease duration later. A renewal that finds its Lease object
replaced (another uid: it was deleted, and the renewal made a new one) starts a new term, so
a pass begun under the old Lease writes nothing more.

Two processes given the same identity (`--identity`) would renew one Lease and both act on one
share. Each process writes a random incarnation beside its identity; one that reads another
incarnation on its own Lease steps back for good: it stops renewing, writes nothing and says
why, and the process that renewed last carries the share on. I/O through the ports; the clocks
are the caller's."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply.inventory import NAMESPACE
from gitgate.errors import GitgateError
from gitgate.model.ownership import INSTANCE_LABEL
from gitgate.model.shardmap import ShardMap
from gitgate.passes.fencing import Fence
from gitgate.passes.recorded import read_document, record_document
from gitgate.passes.replicas import (
    ACKNOWLEDGED,
    INCARNATION,
    LEASE_API,
    REPLICA_LABEL,
    Replica,
    Sightings,
    lease_name,
    micro_time,
    replica_of,
)

log = logging.getLogger("gitgate")

MANAGER = "gitgate-shards"


@dataclass(frozen=True)
class Turn:
    """What this replica may do now."""

    shards: ShardMap | None  # the agreed assignment (None: none yet)
    identity: str
    term: int | None  # the fence's term while this replica may write (None: it may not)
    waiting_for: tuple[str, ...] = ()  # live replicas that have not acknowledged it yet
    live: tuple[str, ...] = field(default_factory=tuple)
    gathering: int = 0  # at start: replicas still expected to join before the first pass
    stepped_back: bool = False  # another process renews this identity's Lease: never act

    @property
    def acting(self) -> bool:
        return (not self.stepped_back
                and self.shards is not None and self.identity in self.shards.members
                and self.term is not None and not self.waiting_for and not self.gathering)

    def owns(self, bundle: str) -> bool:
        return self.shards is not None and self.shards.owns(self.identity, bundle)

    def said(self) -> str:
        if self.stepped_back:
            return (f"another process runs as {self.identity} and renews its Lease: this "
                    "one writes nothing; give each replica its own --identity and restart it")
        if self.shards is None:
            return "no assignment yet"
        if self.term is None:
            return "this replica's Lease is not fresh: it writes nothing"
        if self.identity not in self.shards.members:
            return "this replica is not in the assignment yet"
        if self.gathering:
            return (f"starting: waiting for {self.gathering} more replica(s) to join "
                    "(at most one lease duration)")
        if self.waiting_for:
            return f"waiting for {', '.join(self.waiting_for)} to acknowledge the assignment"
        return f"acting on its shard of {len(self.shards.members)} replica(s)"


class Membership:
    """This replica's Lease, renewed in a thread, and the agreement on who reconciles what."""

    def __init__(self, cluster: ClusterPort, instance: str, identity: str, *,
                 lease_duration: int = 15, renew_deadline: int = 10, retry_period: int = 2,
                 expected_replicas: int = 1,
                 wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 monotonic: Callable[[], float] = time.monotonic,
                 on_change: Callable[[], None] = lambda: None):
        if not lease_duration > renew_deadline > retry_period >= 1:
            raise GitgateError("sharding needs lease duration > renew deadline > retry "
                               "period >= 1 second")
        self.cluster, self.instance, self.identity = cluster, instance, identity
        self.lease_duration, self.retry_period = lease_duration, retry_period
        self.wall_clock, self.monotonic = wall_clock, monotonic
        self.fence = Fence(renew_deadline, monotonic)
        self.sightings = Sightings(float(lease_duration))
        self._acknowledged: dict[str, str] = {}  # each peer's acknowledgement, as last read
        self.on_change = on_change  # wakes the loop when the agreement moved
        self.acknowledged = ""
        self.incarnation = uuid.uuid4().hex[:12]  # this process, among any sharing the identity
        self.stepped_back = False
        self._renewed_once = False  # before it, the Lease may still name a predecessor's run
        # at start, the first pass waits (at most one lease duration) until this many
        # replicas are live, so a cold start is shared instead of done by the first one up
        self.expected_replicas = expected_replicas
        self._gather_until: float | None = (  # None: gathered (or never asked to)
            monotonic() + lease_duration if expected_replicas > 1 else None)
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"shards-{identity}")
        self._seen: tuple[str, tuple[str, ...]] | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return lease_name(self.instance, self.identity)

    # ------------------------------------------------------------------ the Lease
    def renew(self) -> bool:
        """Renew this replica's Lease (with the assignment it acknowledges). A renewal that
        finds another Lease object than the one it renewed before (the old one was deleted)
        starts a new term: a pass begun under the old one writes nothing more."""
        if self.stepped_back:
            return False
        sent = self.monotonic()
        now = self.wall_clock()
        try:
            written = self.cluster.apply({
                "apiVersion": LEASE_API, "kind": "Lease",
                "metadata": {"name": self.name, "namespace": NAMESPACE,
                             "labels": {INSTANCE_LABEL: self.instance, REPLICA_LABEL: "true"},
                             "annotations": {ACKNOWLEDGED: self.acknowledged,
                                             INCARNATION: self.incarnation}},
                "spec": {"holderIdentity": self.identity,
                         "leaseDurationSeconds": self.lease_duration,
                         "renewTime": micro_time(now)}}, manager=MANAGER, force=True)
        except GitgateError as exc:
            log.warning("cannot renew this replica's Lease %s: %s", self.name, exc.message,
                        extra={"event": "shard-lease"})
            return False
        obj = getattr(written, "obj", None)
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        uid = meta.get("uid") if isinstance(meta, dict) else None
        if not self.fence.renewed(at=sent, lease=uid if isinstance(uid, str) else None):
            log.warning("this replica's Lease %s was deleted and made anew: the pass in flight "
                        "writes nothing more; the next one starts a new term", self.name,
                        extra={"event": "shard-lease"})
        self._renewed_once = True
        return True

    def replicas(self) -> list[Replica]:
        renewed_before = self._renewed_once  # else the list may predate this run's Lease
        found = self.cluster.list_objects(LEASE_API, "Lease", NAMESPACE,
                                          f"{INSTANCE_LABEL}={self.instance},"
                                          f"{REPLICA_LABEL}=true")
        replicas = [r for r in (replica_of(lease) for lease in found) if r is not None]
        if renewed_before:
            self._notice_a_twin(replicas)
        return replicas

    def _notice_a_twin(self, replicas: list[Replica]) -> None:
        """Step back for good when another process renewed this identity's Lease."""
        mine = next((r for r in replicas if r.identity == self.identity), None)
        if self.stepped_back or mine is None or mine.incarnation in ("", self.incarnation):
            return
        self.stepped_back = True
        self.fence.lapse()  # a pass in flight writes nothing more
        log.error("another process (incarnation %s) renews the Lease of replica %s: this one "
                  "(incarnation %s) steps back and writes nothing; give each replica its own "
                  "--identity and restart it", mine.incarnation, self.identity,
                  self.incarnation, extra={"event": "shard-twin", "identity": self.identity})
        self.on_change()

    # ------------------------------------------------------------------ the agreement
    def agreed(self) -> ShardMap | None:
        return ShardMap.from_dict(read_document(self.cluster, self.instance, "shards"))

    def live(self, replicas: list[Replica], shards: ShardMap | None) -> tuple[str, ...]:
        """The replicas to take as live, from this replica's own sightings (`Sightings`)."""
        return self.sightings.live(replicas, shards.members if shards else (),
                                   self.monotonic())

    def settle(self) -> tuple[ShardMap | None, list[Replica]]:
        """Read the replicas and the assignment; write the assignment anew when the live set
        differs from it (a replica joined, or one's Lease expired)."""
        replicas = self.replicas()
        shards = self.agreed()
        live = ShardMap.of(list(self.live(replicas, shards)))
        self._sweep(replicas)
        if live.members and not self.stepped_back \
                and (shards is None or shards.members != live.members):
            try:
                record_document(self.cluster, self.instance, "shards", live.as_dict())
                log.info("shard assignment: %s", ", ".join(live.members),
                         extra={"event": "shards", "members": list(live.members),
                                "digest": live.digest})
                shards = live
            except GitgateError as exc:
                log.warning("cannot record the shard assignment: %s", exc.message,
                            extra={"event": "shards"})
        return shards, replicas

    def _sweep(self, replicas: list[Replica]) -> None:
        """Delete the Leases nobody has renewed for two lease durations, as this replica saw
        them (replicas that stopped or died; a live holder would only make its Lease anew)."""
        stale = self.sightings.stale(self.monotonic()) - {self.identity}
        for replica in replicas:
            if replica.identity in stale:
                with contextlib.suppress(GitgateError):
                    self.cluster.delete(LEASE_API, "Lease", NAMESPACE,
                                        lease_name(self.instance, replica.identity))

    def turn(self) -> Turn:
        """At the start of a tick (no pass in flight): acknowledge the agreed assignment, and
        say whether this replica may act on it."""
        try:
            shards, replicas = self.settle()
        except GitgateError as exc:
            log.warning("cannot read the replicas' Leases: %s", exc.message,
                        extra={"event": "shards"})
            return Turn(None, self.identity, None, stepped_back=self.stepped_back)
        if self.stepped_back:
            return Turn(shards, self.identity, None, stepped_back=True)
        if shards is not None and shards.digest != self.acknowledged \
                and self.identity in shards.members:
            self.acknowledged = shards.digest
            self.renew()  # others see the acknowledgement at once
            replicas = [r if r.identity != self.identity else Replica(
                r.identity, r.renewed, r.duration, self.acknowledged) for r in replicas]
        live = self.live(replicas, shards)
        # a live peer whose Lease vanished acts on what it acknowledged last
        self._acknowledged = {identity: acknowledged for identity, acknowledged in
                              self._acknowledged.items() if identity in live}
        self._acknowledged.update((r.identity, r.acknowledged) for r in replicas)
        waiting = tuple(sorted(identity for identity in live if shards is not None
                               and self._acknowledged.get(identity) != shards.digest
                               and identity != self.identity))
        return Turn(shards, self.identity, self.fence.term(), waiting, live,
                    self._gathering(len(live)))

    def _gathering(self, live: int) -> int:
        """Replicas still awaited before the first pass: none once they all came, once one
        lease duration passed since the start (a peer that never comes does not hold the
        others for longer), or after the first acting turn (a later departure never stalls)."""
        if self._gather_until is None:
            return 0
        if live >= self.expected_replicas or self.monotonic() >= self._gather_until:
            self._gather_until = None
            return 0
        return self.expected_replicas - live

    # ------------------------------------------------------------------ the thread
    def start(self) -> Membership:
        self.renew()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self.stopped.wait(self.retry_period):
            self.look()

    def look(self) -> None:
        """One beat of the thread: renew this replica's Lease, read the others', and wake the
        loop when the agreement or the acknowledgements moved."""
        if self.stepped_back:
            return
        self.renew()
        try:
            shards, replicas = self.settle()
        except GitgateError:
            return
        live = set(self.live(replicas, shards))
        seen = (shards.digest if shards else "",
                tuple(sorted(f"{r.identity}={r.acknowledged}" for r in replicas
                             if r.identity in live)))
        with self._lock:
            changed, self._seen = seen != self._seen, seen
        if changed:
            self.on_change()

    def seen_assignment(self) -> str | None:
        """The assignment's digest as the thread last read it, with no request ("": none
        agreed yet; None: not read yet)."""
        with self._lock:
            return self._seen[0] if self._seen is not None else None

    def stop(self) -> None:
        """Stop renewing and delete this replica's Lease, so the others take its bundles
        over at once instead of waiting for it to expire."""
        self.stopped.set()
        self.fence.lapse()
        if self.stepped_back:
            return  # the Lease is the other process's now
        # the others take its bundles one lease duration after they see the Lease vanish (a
        # Lease's contents are anyone's to write: no "released" mark could be trusted)
        with contextlib.suppress(GitgateError):  # else it is swept once stale
            self.cluster.delete(LEASE_API, "Lease", NAMESPACE, self.name)
