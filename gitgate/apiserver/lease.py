"""Leader election on a coordination.k8s.io/v1 Lease, with the official client's
`kubernetes.leaderelection`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from gitgate.errors import GitgateError


class _StoppableLeaseLock(LeaseLock):
    """The client's LeaseLock bound to our ApiClient; once stopped it neither reads nor renews,
    so the lease runs out and a standby takes over."""

    def __init__(self, name: str, namespace: str, identity: str, api: k8s.ApiClient,
                 stopped: threading.Event):
        super().__init__(name, namespace, identity)
        self.api_instance = k8s.CoordinationV1Api(api)
        self.stopped = stopped

    def get(self, name: str, namespace: str) -> Any:
        if self.stopped.is_set():
            return False, ApiException(status=503, reason="stopping")
        return super().get(name, namespace)

    def create(self, name: str, namespace: str, election_record: Any) -> Any:
        return False if self.stopped.is_set() else super().create(name, namespace,
                                                                   election_record)

    def update(self, name: str, namespace: str, updated_record: Any) -> Any:
        return False if self.stopped.is_set() else super().update(name, namespace,
                                                                   updated_record)


class LeaseElector:
    """Leader election on a coordination.k8s.io/v1 Lease, with the official client's
    `kubernetes.leaderelection`: only the holder writes; a standby takes over within the lease
    duration when the holder stops renewing."""

    def __init__(self, api: k8s.ApiClient, namespace: str, name: str, identity: str, *,
                 lease_duration: int = 15, renew_deadline: int = 10, retry_period: int = 2,
                 on_leading: Callable[[], None] = lambda: None):
        if not (lease_duration > renew_deadline > 1.2 * retry_period and retry_period >= 1):
            raise GitgateError("leader election needs lease > renew deadline > 1.2 x retry "
                               "period >= 1 second")
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.timings = (lease_duration, renew_deadline, retry_period)
        self.on_leading = on_leading  # called once this replica holds the Lease (wakes the loop)
        self.leading = threading.Event()
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"lease-{identity}")

    def start(self) -> LeaseElector:
        self._thread.start()
        return self

    def stop(self, *, release: bool = True) -> None:
        """Stop renewing; when this replica holds the Lease, hand it back at once (holder
        cleared, duration 1 s, as client-go's ReleaseOnCancel does), so a standby takes over
        within its retry period instead of waiting out the lease."""
        was_leading = self.leading.is_set()
        self.stopped.set()
        self.leading.clear()
        if release and was_leading:
            self._release()

    def _release(self) -> None:
        leases = k8s.CoordinationV1Api(self.api)
        for _ in range(3):  # a renewal in flight may bump the version once
            try:
                lease = leases.read_namespaced_lease(self.name, self.namespace)
                if lease.spec is None or (lease.spec.holder_identity or "") != self.identity:
                    return
                lease.spec.holder_identity = None
                lease.spec.lease_duration_seconds = 1
                leases.replace_namespaced_lease(self.name, self.namespace, lease)
                return
            except ApiException as exc:
                if exc.status != 409:
                    return
            except Exception:  # the API server is gone: the lease simply runs out
                return

    def is_leader(self) -> bool:
        return self.leading.is_set() and not self.stopped.is_set()

    def _run(self) -> None:
        while not self.stopped.is_set():
            lock = _StoppableLeaseLock(self.name, self.namespace, self.identity, self.api,
                                       self.stopped)
            lease_duration, renew_deadline, retry_period = self.timings
            config = electionconfig.Config(lock, lease_duration, renew_deadline, retry_period,
                                           self._started, self.leading.clear)
            leaderelection.LeaderElection(config).run()
            self.leading.clear()

    def _started(self) -> None:
        if not self.stopped.is_set():
            self.leading.set()
            self.on_leading()
