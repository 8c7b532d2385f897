"""Leader election on a coordination.k8s.io/v1 Lease, with the official client's
`kubernetes.leaderelection`; its requests go through the bounded pool of the client it is
given (`exchange`), so a refusal there (a redirect, a deadline, an answer too large or
encoded) is a Lease that cannot be used, with that error's words."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from gitgate.errors import GitgateError, KubeError


class _StoppableLeaseLock(LeaseLock):
    """The client's LeaseLock bound to our ApiClient; once stopped it neither reads nor renews,
    so the lease runs out and a standby takes over.

    A Lease deleted under a live holder is not free: the holder may be writing. A standby that
    saw another holder's record change less than one lease duration ago (on its own monotonic
    clock) reads a vanished Lease as that last record, so the election waits it out as it
    would a holder that stopped renewing; the holder's own renewal makes the Lease anew."""

    def __init__(self, name: str, namespace: str, identity: str, api: k8s.ApiClient,
                 stopped: threading.Event, said: Callable[[str | None], None],
                 lease_duration: float, monotonic: Callable[[], float] = time.monotonic):
        super().__init__(name, namespace, identity)
        self.api_instance = k8s.CoordinationV1Api(api)
        self.stopped = stopped
        self.said = said  # why the Lease cannot be used (None: it can)
        self.lease_duration, self.monotonic = lease_duration, monotonic
        self._seen: tuple[Any, tuple[Any, Any], float] | None = None  # record, key, since

    def get(self, name: str, namespace: str) -> Any:
        if self.stopped.is_set():
            return False, ApiException(status=503, reason="stopping")
        try:
            found, record = super().get(name, namespace)
        except KubeError as exc:  # the bounded pool's refusal
            found, record = False, exc
        if found:
            self.said(None)
            key = (record.holder_identity, record.renew_time)
            if self._seen is None or self._seen[1] != key:
                self._seen = (record, key, self.monotonic())
            return found, record
        if getattr(record, "status", None) != 404:
            self.said(lease_problem("read", namespace, name, record))
            return found, record
        self.said(None)  # not there: created next, unless a live holder's Lease vanished
        self.lease_reference = None
        seen = self._seen
        if (seen is not None and seen[0].holder_identity not in (None, self.identity)
                and self.monotonic() - seen[2] < self.lease_duration):
            return True, seen[0]
        return found, record

    def create(self, name: str, namespace: str, election_record: Any) -> Any:
        return False if self.stopped.is_set() else self._written(
            "create", namespace, name, lambda: self.api_instance.create_namespaced_lease(
                namespace, k8s.V1Lease(metadata=k8s.V1ObjectMeta(name=name),
                                       spec=self.get_lease_spec(election_record))))

    def update(self, name: str, namespace: str, updated_record: Any) -> Any:
        if self.stopped.is_set():
            return False
        if self.lease_reference is None:  # it vanished (and was waited out): made anew
            return self.create(name, namespace, updated_record)
        reference = self.lease_reference
        reference.spec = self.get_lease_spec(updated_record, reference.spec)
        return self._written("update", namespace, name,
                             lambda: self.api_instance.replace_namespaced_lease(
                                 name=name, namespace=namespace, body=reference))

    def _written(self, verb: str, namespace: str, name: str, write: Callable[[], Any]) -> bool:
        """A create or a replace; a conflict (another replica got there first) is the
        election working, any other refusal is a Lease that cannot be written."""
        try:
            self.lease_reference = write()
        except (ApiException, KubeError) as exc:
            if exc.status == 404:  # deleted under its holder: made anew at the next renewal
                self.lease_reference = None
            self.said(None if exc.status in (404, 409)
                      else lease_problem(verb, namespace, name, exc))
            return False
        self.said(None)
        return True


def lease_problem(verb: str, namespace: str, name: str, error: Any) -> str:
    """Why the Lease cannot be used, for the log, /status and /readyz."""
    if isinstance(error, KubeError):
        return f"cannot {verb} Lease {namespace}/{name}: {error.message}"
    status = getattr(error, "status", None)
    reason = getattr(error, "reason", None) or type(error).__name__
    return (f"cannot {verb} Lease {namespace}/{name}: {status or ''} {reason}".rstrip()
            + (" (a redirect: point the kubeconfig at the API server itself)"
               if status in (301, 302, 303, 307, 308) else "")
            + (" (RBAC: grant get, create and update on leases)" if status == 403 else ""))


class LeaseElector:
    """Leader election on a coordination.k8s.io/v1 Lease, with the official client's
    `kubernetes.leaderelection`: only the holder writes; a standby takes over within the lease
    duration when the holder stops renewing."""

    def __init__(self, api: k8s.ApiClient, namespace: str, name: str, identity: str, *,
                 lease_duration: int = 15, renew_deadline: int = 10, retry_period: int = 2,
                 on_leading: Callable[[], None] = lambda: None,
                 on_problem: Callable[[], None] = lambda: None):
        if not (lease_duration > renew_deadline > 1.2 * retry_period and retry_period >= 1):
            raise GitgateError("leader election needs lease > renew deadline > 1.2 x retry "
                               "period >= 1 second")
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.timings = (lease_duration, renew_deadline, retry_period)
        self.on_leading = on_leading  # called once this replica holds the Lease (wakes the loop)
        self.leading = threading.Event()
        self.stopped = threading.Event()
        self.problem: str | None = None  # why the Lease cannot be read or written (None: fine)
        self.on_problem = on_problem  # called when `problem` changes (wakes the loop)
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

    def _said(self, problem: str | None) -> None:
        changed, self.problem = problem != self.problem, problem
        if changed:
            self.on_problem()

    def _run(self) -> None:
        while not self.stopped.is_set():
            lease_duration, renew_deadline, retry_period = self.timings
            lock = _StoppableLeaseLock(self.name, self.namespace, self.identity, self.api,
                                       self.stopped, self._said, lease_duration)
            config = electionconfig.Config(lock, lease_duration, renew_deadline, retry_period,
                                           self._started, self.leading.clear)
            try:
                leaderelection.LeaderElection(config).run()
            except Exception as exc:  # a transport error: stand by, say why, try again
                self._said(lease_problem("reach", self.namespace, self.name, exc))
                self.leading.clear()
                self.stopped.wait(retry_period)
            self.leading.clear()

    def _started(self) -> None:
        if not self.stopped.is_set():
            self.leading.set()
            self.on_leading()
