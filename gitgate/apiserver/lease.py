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

FOREIGN = "(written by someone else)"  # a holder this replica cannot vouch for


class _StoppableLeaseLock(LeaseLock):
    """The client's LeaseLock bound to our ApiClient; once stopped it neither reads nor renews,
    so the lease runs out and a standby takes over.

    A Lease's contents are anyone's to write, so the lock trusts only its own writes: a Lease
    that names this replica but that it did not write last, or that names no holder (released,
    or cleared by someone), is read as held by someone else, and the election waits it out
    for one lease duration from that change, as it waits out a holder that stopped renewing.
    A Lease deleted under a live holder is waited out the same way (the last record seen,
    from its own monotonic clock); the holder's own renewal makes it anew. The holder learns
    of any write but its own at its next renewal (a conflict), and stops at once
    (`on_lost`): its fence lapses before any other replica may lead."""

    def __init__(self, name: str, namespace: str, identity: str, api: k8s.ApiClient,
                 stopped: threading.Event, said: Callable[[str | None], None],
                 lease_duration: float, monotonic: Callable[[], float] = time.monotonic,
                 on_renewed: Callable[[float], object] = lambda at: None,
                 on_lost: Callable[[], None] = lambda: None):
        super().__init__(name, namespace, identity)
        self.api_instance = k8s.CoordinationV1Api(api)
        self.stopped = stopped
        self.said = said  # why the Lease cannot be used (None: it can)
        self.lease_duration, self.monotonic = lease_duration, monotonic
        self.on_renewed, self.on_lost = on_renewed, on_lost
        self._seen: tuple[Any, tuple[Any, Any], float] | None = None  # record, key, since
        self._mine: str | None = None  # the resourceVersion of this replica's last write

    def get(self, name: str, namespace: str) -> Any:
        if self.stopped.is_set():
            return False, ApiException(status=503, reason="stopping")
        try:
            found, record = super().get(name, namespace)
        except KubeError as exc:  # the bounded pool's refusal
            found, record = False, exc
        if found:
            self.said(None)
            version = _version(self.lease_reference)
            if record.holder_identity is None or (
                    record.holder_identity == self.identity and version != self._mine):
                record.holder_identity = FOREIGN
                record.renew_time = record.acquire_time = version or "?"
                record.lease_duration = record.lease_duration or str(self.lease_duration)
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
        sent = self.monotonic()
        try:
            self.lease_reference = write()
        except (ApiException, KubeError) as exc:
            if exc.status == 404:  # deleted under its holder: made anew at the next renewal
                self.lease_reference = None
            if exc.status in (404, 409) and verb == "update":
                self.on_lost()  # someone else wrote it: this replica writes nothing more now
            self.said(None if exc.status in (404, 409)
                      else lease_problem(verb, namespace, name, exc))
            return False
        self._mine = _version(self.lease_reference)
        self.on_renewed(sent)
        self.said(None)
        return True


def _version(lease: Any) -> str | None:
    meta = getattr(lease, "metadata", None)
    version = getattr(meta, "resource_version", None)
    return version if isinstance(version, str) else None


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
                 on_problem: Callable[[], None] = lambda: None,
                 on_renewed: Callable[[float], object] = lambda at: None,
                 on_lost: Callable[[], None] = lambda: None):
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
        # the loop's fence: each write of this replica's own Lease record (with the monotonic
        # time it was sent), and the moment it may write no more
        self.on_renewed, self.on_lost = on_renewed, on_lost
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"lease-{identity}")

    def start(self) -> LeaseElector:
        self._thread.start()
        return self

    def stop(self, *, release: bool = True) -> None:
        """Stop renewing; when this replica holds the Lease, clear its holder (as client-go's
        ReleaseOnCancel does), so that people see nobody leads. A standby still waits one
        lease duration from that change: nothing in a Lease can prove its holder stopped."""
        was_leading = self.leading.is_set()
        self.stopped.set()
        self._lost()
        if release and was_leading:
            self._release()

    def _lost(self) -> None:
        self.leading.clear()
        self.on_lost()

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
                                       self.stopped, self._said, lease_duration,
                                       on_renewed=self.on_renewed, on_lost=self._lost)
            config = electionconfig.Config(lock, lease_duration, renew_deadline, retry_period,
                                           self._started, self._lost)
            try:
                leaderelection.LeaderElection(config).run()
            except Exception as exc:  # a transport error: stand by, say why, try again
                self._said(lease_problem("reach", self.namespace, self.name, exc))
                self._lost()
                self.stopped.wait(retry_period)
            self._lost()

    def _started(self) -> None:
        if not self.stopped.is_set():
            self.leading.set()
            self.on_leading()
