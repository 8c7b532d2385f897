"""The loop's observer: what Karmada did with each bundle, read after a pass and every
`status_interval`, kept for `/status`, `/metrics` and the page, and written into each
Bundle's status (`clusters`, `clustersReady`, `lastHealthyRevision`, under the field manager
`recordformat.OBSERVER`). It is the only writer of those fields; a pass writes the rest of the
status."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply.inventory import Inventory
from gitgate.apply.ledger import read_inventories
from gitgate.apply.recordcache import RecordCache
from gitgate.apply.recordformat import OBSERVER, clusters_status
from gitgate.errors import GitgateError
from gitgate.heap import give_back
from gitgate.loop.schedule import LoopState
from gitgate.loop.shardturn import ShardTurn
from gitgate.passes.karmadareads import Observation, ReadStopped, Stoppable, observe_following
from gitgate.progression.rollouts import retries_requested
from gitgate.status.metrics import LoopMetrics

log = logging.getLogger("gitgate")


class Observer:
    def __init__(self, cluster: ClusterPort, instance: str, state: LoopState,
                 metrics: LoopMetrics, turns: ShardTurn, status_interval: timedelta,
                 clock: Callable[[], datetime], wake: threading.Event,
                 records: RecordCache | None = None):
        self.cluster, self.instance, self.state, self.metrics = cluster, instance, state, metrics
        self.turns, self.status_interval, self.clock, self.wake = (
            turns, status_interval, clock, wake)
        self._recorded: dict[str, Any] = {}  # per bundle, the clusters last written
        self._unrecorded: set[str] = set()
        self.records = records  # the loop's records' cache: what it writes is kept there

    def after_tick(self, passed: bool) -> None:
        """Read Karmada after a pass, or when the status interval is up; not while this
        replica's share is moving (a peer left or came during the pass), and no further once
        the Lease thread sees it move during the read: a read of a share about to change would
        only delay the pass over the new one (a takeover waited a full read of 2,500 bundles,
        12 s), which reads Karmada in turn."""
        if not (passed or self.status_due(self.clock())):
            return
        if self.turns.moving():
            log.info("shard: the replicas changed during the pass; Karmada is read after the "
                     "pass over the new share", extra={"event": "observe-deferred"})
            changed = self._pass_changes(passed)[1]
            unread = self.state.unread
            self.state.unread = None if changed is None or unread is None else unread | changed
            return
        self.observe_after(passed, self.turns.moved_since())

    def observe_after(self, passed: bool, stop: Callable[[], bool] | None = None) -> None:
        """The observer's read after a tick: after a pass that ran, from the inventories it
        left and following the bundles it changed; else a read of all."""
        self.refresh_status(*self._pass_changes(passed), stop=stop)
        give_back()  # what the read freed (the lists it decoded)

    def _pass_changes(self, passed: bool
                      ) -> tuple[Mapping[str, Inventory] | None, set[str] | None]:
        """After a pass that ran: the inventories it left and the bundles it changed (None:
        it may have changed any); else (None, None): read them all."""
        result = self.state.last_result
        if passed and result is not None and self.state.failure is None:
            return result.inventories, result.changed()
        return None, None

    def status_due(self, now: datetime) -> bool:
        last = self.state.observed_all
        return last is None or now - last >= self.status_interval

    def refresh_status(self, inventories: Mapping[str, Inventory] | None = None,
                       changed: set[str] | None = None,
                       stop: Callable[[], bool] | None = None) -> None:
        """Read what Karmada did with each bundle (after every pass, and every
        `status_interval` when no pass runs), for /status and /metrics (with --shard, each
        bundle of this replica's share: the reads, the series and the memory follow the
        share, and no two replicas export one bundle's series); a `gitgate resume`
        retry request found in an inventory makes the next tick a pass. `inventories`: as
        the pass just left them (not read again), else read here. `changed`: the bundles a
        pass just changed; until the next read of all is due, only they and the bundles
        Karmada had not settled are read again (`observe_following`). `stop`: asked before
        each list; when it says so the read ends there and the last observation stays."""
        began = time.monotonic()
        self.metrics.karmada_reading.set(1)
        try:
            self._refresh_status(inventories, changed, stop)
        finally:
            self.metrics.karmada_reading.set(0)
            self.metrics.karmada_read.observe(time.monotonic() - began)

    def _refresh_status(self, inventories: Mapping[str, Inventory] | None,
                        changed: set[str] | None, stop: Callable[[], bool] | None) -> None:
        now = self.clock()
        self.state.last_observed = now
        if self.status_due(now) or changed is None or self.state.unread is None:
            changed = None
        else:
            changed = changed | self.state.unread
        try:
            if inventories is None:
                inventories = read_inventories(self.cluster, self.instance, self.records)
            if self.turns.shards is not None:  # each replica observes its own share, no more
                inventories = {name: inventory for name, inventory in inventories.items()
                               if self.turns.owns(name)}
            lister = self.cluster if stop is None else Stoppable(self.cluster, stop)
            observation = observe_following(lister, inventories.values(),
                                            self.state.observation, changed)
            if changed is None:
                self.state.observed_all = now
            self.state.unread = set()
            self.state.inventories = inventories
            if retries_requested(inventories):
                self.state.rollout_retry = True
                self.wake.set()
        except GitgateError as exc:
            observation = Observation(error=f"cannot read gitgate's inventories: {exc.message}")
        except ReadStopped:
            self.state.unread = None if changed is None else changed
            log.info("shard: the replicas changed during the read of Karmada; it is read "
                     "again after the pass over the new share", extra={"event": "observe-stopped"})
            return
        if observation.error:
            log.warning("%s", observation.error, extra={"event": "observe"})
        self.state.observation = observation
        self.metrics.record_dispatch(observation.bundles)
        if inventories is not None and not observation.error:
            self._record_clusters(inventories, observation)

    def _record_clusters(self, inventories: Mapping[str, Inventory],
                         observation: Observation) -> None:
        """What Karmada reports of each bundle, into its Bundle's status (for `kubectl get`'s
        CLUSTERS column), when it changed; a failed write is said once and tried again."""
        writer = self.turns.writer()
        if writer is None:
            return
        for name, dispatch in observation.bundles.items():
            inventory = inventories.get(name)
            if inventory is None or not self.turns.owns(name):
                continue
            written = clusters_status(inventory, dispatch)
            if self._recorded.get(name) == written:
                continue
            try:
                answer = writer.apply(written, manager=OBSERVER, subresource="status").obj
                if self.records is not None:
                    self.records.written(answer)
            except GitgateError as exc:
                if name not in self._unrecorded:
                    log.warning("cannot record what Karmada reports of %s in its Bundle: %s",
                                name, exc.message, extra={"event": "observe"})
                self._unrecorded.add(name)
                continue
            self._unrecorded.discard(name)
            self._recorded[name] = written
