"""Whose turn it is to write: with `--shard`, this replica's share as the replicas agree on
it (`Turn`), and whether the assignment moved under a read or a pass; with a leader Lease,
the fence its renewals keep fresh. Every write the loop makes outside a pass goes through
`writer()`, so a replica whose Lease lapsed writes nothing more."""

from __future__ import annotations

import logging
from collections.abc import Callable

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply.recordcache import RecordCache
from gitgate.errors import GitgateError
from gitgate.loop.schedule import LoopState
from gitgate.passes.fencing import Fence, FencedCluster
from gitgate.passes.recorded import delete_part, read_parts
from gitgate.passes.shards import Membership, Turn
from gitgate.status.metrics import LoopMetrics

log = logging.getLogger("gitgate")
RECORDS_KEY = "gitgate.records"  # with --shard: the replica that moves earlier releases' records


class ShardTurn:
    """This replica's right to write: `shards` (`--shard`: every replica reconciles a share),
    else `fence` (a leader Lease: its renewals keep it fresh), else always."""

    def __init__(self, cluster: ClusterPort, instance: str, state: LoopState,
                 metrics: LoopMetrics, shards: Membership | None = None,
                 fence: Fence | None = None, records: RecordCache | None = None):
        self.cluster, self.instance, self.state, self.metrics = cluster, instance, state, metrics
        self.shards = shards
        self.fence = fence
        self._acting_on = ""  # the assignment this replica's last pass acted on
        self.records = records  # the loop's records' cache

    def take(self) -> bool:
        """Agree on the shards before a tick: False while this replica may not act (it
        waits for the others, or its Lease is not fresh); a new share makes the tick a pass."""
        assert self.shards is not None
        before = self.state.turn
        turn = self.state.turn = self.shards.turn()
        if before is None or before.said() != turn.said():
            log.info("shard: %s", turn.said(), extra={
                "event": "shard", "acting": turn.acting,
                "members": list(turn.shards.members) if turn.shards else []})
        self.metrics.shard_acting.set(1 if turn.acting else 0)
        self.metrics.shard_replicas.set(len(turn.shards.members) if turn.shards else 0)
        if not turn.acting or turn.shards is None:
            return False
        if turn.shards.digest != self._acting_on:
            self._acting_on = turn.shards.digest
            records = self.records
            if records is not None:  # what a former holder wrote last is read as written
                records.read_consistently()
            self.state.requested = True  # a new share: reconcile it now
            if turn.owns("gitgate.overview"):
                self._drop_departed_parts(turn.shards.members)
        return True

    def _drop_departed_parts(self, members: tuple[str, ...]) -> None:
        """The overview parts of replicas no longer in the assignment (stopped, or killed),
        deleted by the one replica that holds the overview: the page ignores them anyway."""
        for part in sorted(set(read_parts(self.cluster, self.instance, "overview"))
                           - set(members)):
            try:
                delete_part(self.writer() or self.cluster, self.instance, "overview", part)
            except GitgateError as exc:
                log.warning("cannot delete the overview part of departed replica %s: %s",
                            part, exc.message, extra={"event": "overview-unrecorded"})

    def acting(self) -> Turn | None:
        """With --shard: the turn a pass acts in (None without --shard)."""
        return self.state.turn if self.shards is not None else None

    def pass_cluster(self) -> ClusterPort:
        """Where a pass writes: through the fence of this replica's term."""
        turn = self.acting()
        if turn is not None and turn.term is not None and self.shards is not None:
            return FencedCluster(self.cluster, self.shards.fence, turn.term)
        if self.fence is not None:  # a leader: its pass writes while its term lasts
            term = self.fence.term()
            return FencedCluster(self.cluster, self.fence, -1 if term is None else term)
        return self.cluster

    def writer(self) -> ClusterPort | None:
        """Where the loop's writes outside a pass go (Bundle status, its documents, the
        overview's parts): with --shard, through the fence of the term this replica acts in,
        so a replica whose Lease lapsed writes nothing for its former share (None: it may not
        write now)."""
        if self.shards is None:
            if self.fence is None:
                return self.cluster
            term = self.fence.term()
            return None if term is None else FencedCluster(self.cluster, self.fence, term)
        turn = self.state.turn
        if turn is None or turn.term is None or not turn.acting:
            return None
        return FencedCluster(self.cluster, self.shards.fence, turn.term)

    def owns(self, key: str) -> bool:
        """Whether this replica writes what `key` names (always, without --shard)."""
        turn = self.state.turn
        return self.shards is None or (turn is not None and turn.acting and turn.owns(key))

    def moved_since(self) -> Callable[[], bool] | None:
        """With --shard: a question a long read asks before each list, and a pass before each
        record that only follows the new revision, with no request of its own: has the Lease
        thread seen the assignment move (away from the one this replica acts on) since the
        read or pass began? None without --shard."""
        turn = self.state.turn
        if self.shards is None or turn is None or turn.shards is None:
            return None
        membership, acting_on = self.shards, turn.shards.digest
        began = membership.seen_assignment()

        def moved() -> bool:
            seen = membership.seen_assignment()
            return seen is not None and seen not in (began, acting_on)
        return moved

    def moving(self) -> bool:
        """With --shard: whether the live replicas no longer match the assignment this
        replica last acted on (a read error says no: the status is read as usual)."""
        turn = self.state.turn
        if self.shards is None or turn is None or turn.shards is None:
            return False
        try:
            shards, _ = self.shards.settle()
        except GitgateError:
            return False
        return shards is not None and shards.digest != turn.shards.digest
