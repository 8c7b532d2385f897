"""The Kubernetes API edge: the only module that imports `kubernetes`.

Requests go through the official client's ApiClient (auth, TLS, kubeconfig handling); writes
are server-side apply patches (`application/apply-patch+yaml`, field manager `gitgate`).
Discovery (GVK -> resource and scope) is cached and refreshed after CRDs are applied.
"""

from __future__ import annotations

import json
import re
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from gitgate.apply.changeset import Applied
from gitgate.apply.fanout import MAX_CONCURRENCY
from gitgate.apply.kubeerrors import (
    RetryPolicy,
    Timeouts,
    credential_error,
    display_url,
    hide_values,
    secret_values,
    transport_error,
)
from gitgate.errors import GitgateError, KubeError, Reason
from gitgate.model import FIELD_MANAGER, Manifest, ObjectRef
from gitgate.model.ownership import api_version_problem, segment_problem

DISCOVERY_REFRESH = 10.0  # seconds between re-reads of one group's discovery on a miss
_CONFLICT = re.compile(r'conflicts? with "([^"]+)"')
_QUOTED_VALUE = re.compile(r'((?:Invalid|Unsupported|Duplicate) value: )(?:"(?:[^"\\]|\\.)*"|\S+)')


@dataclass(frozen=True)
class ApiResource:
    group_version: str
    plural: str
    namespaced: bool


def load_client(kubeconfig: str | None = None, context: str | None = None, *,
                timeouts: Timeouts | None = None) -> k8s.ApiClient:
    """A client from --kubeconfig/--context, $KUBECONFIG, ~/.kube/config, or in-cluster.

    urllib3 never retries on its own (the adapter's RetryPolicy is the only one) and never
    warns per request; every request, the Lease's too, is bounded by `timeouts`."""
    configuration = k8s.Configuration()
    try:
        if kubeconfig or context:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context,
                                        client_configuration=configuration)
        else:
            try:
                k8s_config.load_kube_config(client_configuration=configuration)
            except (ConfigException, FileNotFoundError):
                k8s_config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, FileNotFoundError) as exc:
        raise GitgateError(f"cannot load a kubeconfig ({exc}); pass --kubeconfig or set "
                           "KUBECONFIG") from None
    configuration.retries = False
    if configuration.refresh_api_key_hook is not None:
        configuration.refresh_api_key_hook = throttled_refresh(
            configuration.refresh_api_key_hook)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize,
                                                   MAX_CONCURRENCY)
    api = k8s.ApiClient(configuration)
    bounds = timeouts or Timeouts()
    api.rest_client.pool_manager.connection_pool_kw["timeout"] = urllib3.Timeout(
        connect=bounds.connect, read=bounds.read)
    if not configuration.verify_ssl:
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    return api


TOKEN_CHECK_SECONDS = 10.0


def throttled_refresh(hook: Callable[[Any], None], seconds: float = TOKEN_CHECK_SECONDS,
                      clock: Callable[[], float] = time.monotonic) -> Callable[[Any], None]:
    """The client's token hook, run at most once every `seconds`.

    With a token in the kubeconfig, the client re-applies the whole kubeconfig before every
    request (its host setter reads the proxy variables of the environment each time): about
    a third of the client's CPU per request. It renews a token 5 minutes before it expires
    (EXPIRY_SKEW_PREVENTION_DELAY), so checking every few seconds renews it just as surely."""
    lock = threading.Lock()
    last: list[float] = []
    inner = [hook]

    def refresh(configuration: Any) -> None:
        with lock:
            now = clock()
            if last and now - last[0] < seconds:
                return
            inner[0](configuration)
            last[:] = [now]
            if configuration.refresh_api_key_hook is not refresh:  # the hook sets itself anew
                inner[0] = configuration.refresh_api_key_hook
                configuration.refresh_api_key_hook = refresh
    return refresh


def tls_verification_off(api: k8s.ApiClient) -> bool:
    return not api.configuration.verify_ssl


class KubeCluster:
    """Reads and writes Kubernetes objects by manifest."""

    def __init__(self, api: k8s.ApiClient, *, timeouts: Timeouts | None = None,
                 retry: RetryPolicy | None = None):
        self.api = api
        self.timeouts = timeouts or Timeouts()
        self.retry = retry or RetryPolicy()
        self.server = display_url(api.configuration.host)  # never its user:password
        self._discovery: dict[str, dict[str, ApiResource]] = {}
        self._refreshed: dict[str, float] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------ transport
    def request(self, method: str, path: str, *, query: dict[str, str] | None = None,
                body: Any = None, content_type: str | None = None) -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        params = self.api.param_serialize(
            method=method, resource_path=path,
            query_params=list((query or {}).items()), header_params=headers, body=body,
            auth_settings=["BearerToken"])
        for attempt in range(self.retry.attempts):
            last = attempt + 1 == self.retry.attempts
            try:
                response = self.api.call_api(*params, _request_timeout=(
                    self.timeouts.connect, self.timeouts.read))
                response.read()
                status, raw = response.status, response.data
            except ApiException as exc:
                if not exc.status:  # the client's wrapping of a TLS failure
                    raise KubeError(f"TLS with {self.server} failed: {exc.reason}",
                                    reason=Reason.API_UNREACHABLE) from None
                status, raw = exc.status, exc.body
            except Exception as exc:  # urllib3's: name the server and the cause, not secrets
                error, retryable = transport_error(exc, self.server, self.timeouts)
                if retryable and not last:
                    time.sleep(self.retry.delay(attempt))
                    continue
                raise error from None
            if status == 429 and not last:
                time.sleep(self.retry.delay(attempt))
                continue
            break
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else (raw or "")
        try:
            body = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        refused = credential_error(status, body, method, path)
        if refused is not None:
            raise refused
        return status, body

    # ------------------------------------------------------------ discovery
    def _resources(self, group_version: str) -> dict[str, ApiResource]:
        with self._lock:
            cached = self._discovery.get(group_version)
        if cached is not None:
            return cached
        path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        status, body = self.request("GET", path)
        found: dict[str, ApiResource] = {}
        if status == 200 and isinstance(body, dict):
            for resource in body.get("resources", []):
                if "/" not in resource["name"]:
                    found[resource["kind"]] = ApiResource(group_version, resource["name"],
                                                          bool(resource["namespaced"]))
        with self._lock:
            if found:
                self._discovery[group_version] = found
        return found

    def _may_refresh(self, group_version: str) -> bool:
        """At most one re-read of a group's discovery per DISCOVERY_REFRESH seconds."""
        now = time.monotonic()
        with self._lock:
            last = self._refreshed.get(group_version)
            if last is not None and now - last < DISCOVERY_REFRESH:
                return False
            self._refreshed[group_version] = now
            return True

    def refresh_discovery(self) -> None:
        with self._lock:
            self._discovery.clear()

    def resource_for(self, api_version: str, kind: str) -> ApiResource:
        resource = self._resources(api_version).get(kind)
        if resource is None and self._may_refresh(api_version):
            # a kind someone else added since the group was read (a new CRD): read it again
            with self._lock:
                self._discovery.pop(api_version, None)
            resource = self._resources(api_version).get(kind)
        if resource is None:
            raise KubeError(f"the API server does not serve {kind} in {api_version} (is its "
                            "CRD installed and established?)", status=404, api_reason="NotFound")
        return resource

    def scope_of(self, api_version: str, kind: str) -> bool | None:
        """Whether the API server serves `kind` as namespaced; None when it does not serve it
        (or cannot be asked now: then the repo's own knowledge decides)."""
        if api_version_problem(api_version):
            return None
        try:
            return self.resource_for(api_version, kind).namespaced
        except GitgateError:
            return None

    def path_for(self, api_version: str, kind: str, namespace: str, name: str = "") -> str:
        """The object's URL path, built only from segments that stay segments (a name with
        '/' or '..' never walks to another object's path, whatever let it through)."""
        for value in (namespace, name):
            if value and segment_problem(value):
                raise KubeError(f"{kind} {namespace + '/' if namespace else ''}{name!r}: "
                                f"{segment_problem(value)}; refusing to build a request for it")
        if api_version_problem(api_version):
            raise KubeError(f"apiVersion {api_version!r}: {api_version_problem(api_version)}")
        resource = self.resource_for(api_version, kind)
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        if resource.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        elif resource.namespaced and name:
            raise KubeError(f"{kind} {name} needs a namespace")
        base += f"/{resource.plural}"
        return base + (f"/{quote(name, safe='')}" if name else "")

    # ------------------------------------------------------------ verbs
    def apply(self, obj: Manifest, *, dry_run: bool = False, force: bool = False,
              manager: str = FIELD_MANAGER) -> Applied:
        ref = ObjectRef.of(obj)
        meta = obj["metadata"]
        path = self.path_for(obj["apiVersion"], obj["kind"], meta.get("namespace", ""),
                             meta["name"])
        query = {"fieldManager": manager}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        hidden = secret_values(obj)  # a Secret's values never leave in an error
        try:
            status, body = self.request("PATCH", path, query=query, body=obj,
                                        content_type="application/apply-patch+yaml")
        except KubeError as exc:
            if hidden:
                raise _without(exc, hidden) from None
            raise
        if status >= 300:
            raise _without(self._error(ref, "apply", status, body), hidden)
        return Applied(body, created=status == 201)

    def _served_path(self, api_version: str, kind: str, namespace: str, name: str) -> str | None:
        """The object's path, or None when its type is not served (its CRD is gone, and so is
        every object of it)."""
        try:
            return self.path_for(api_version, kind, namespace, name)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Manifest | None:
        path = self._served_path(api_version, kind, namespace, name)
        if path is None:
            return None
        status, body = self.request("GET", path)
        if status == 404:
            return None
        if status >= 300:
            raise self._error(ObjectRef(api_version.rpartition("/")[0], kind, namespace, name),
                              "read", status, body)
        return body

    def list_objects(self, api_version: str, kind: str, namespace: str = "",
             label_selector: str = "") -> list[Manifest]:
        """The objects of a kind in `namespace` (a namespaced kind without one: in every
        namespace, one request)."""
        query = {"labelSelector": label_selector} if label_selector else {}
        status, body = self.request("GET", self.path_for(api_version, kind, namespace),
                                    query=query)
        if status == 404:
            return []
        if status >= 300:
            raise KubeError(f"cannot list {kind}: {self._message(body)}", status=status,
                            reason=Reason.LIST_FAILED)
        items = body.get("items", [])
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        """True when deleted, False when it was already gone."""
        path = self._served_path(api_version, kind, namespace, name)
        if path is None:
            return False
        status, body = self.request("DELETE", path, body={
            "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
            content_type="application/json")
        if status == 404:
            return False
        if status >= 300:
            raise self._error(ObjectRef(api_version.rpartition("/")[0], kind, namespace, name),
                              "delete", status, body)
        return True

    def wait_established(self, crd_names: list[str], timeout: float = 60.0) -> list[str]:
        """Wait until the CRDs are Established; returns those that are not in time."""
        deadline = time.monotonic() + timeout
        pending = list(crd_names)
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                crd = self.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name)
                conditions = ((crd or {}).get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in conditions):
                    pending.remove(name)
            if pending:
                time.sleep(0.1)
        self.refresh_discovery()
        return pending

    # ------------------------------------------------------------ errors
    @staticmethod
    def _message(body: Any) -> str:
        if isinstance(body, dict):
            return str(body.get("message") or body.get("reason") or body)
        return str(body).strip()[:300]

    def _error(self, ref: ObjectRef, verb: str, status: int, body: Any) -> KubeError:
        message = self._message(body)
        if ref.kind == "Secret":  # the API server quotes rejected values: never a Secret's
            message = _QUOTED_VALUE.sub(r"\1(value hidden)", message)
        api_reason = body.get("reason", "") if isinstance(body, dict) else ""
        owners = tuple(dict.fromkeys(_CONFLICT.findall(message))) if status == 409 else ()
        causes = ((body.get("details") or {}).get("causes") or []) if isinstance(body,
                                                                            dict) else []
        immutable = tuple(c.get("field", "") for c in causes
                          if "immutable" in str(c.get("message", "")))
        hint = ""
        reason = {"read": Reason.READ_FAILED, "delete": Reason.DELETE_FAILED}.get(
            verb, Reason.APPLY_FAILED)
        if owners:
            hint = (f"; field manager {', '.join(owners)} owns these fields: change it there, "
                    "or run with --force-conflicts to take them over")
        if any(c.get("reason") == Reason.NAMESPACE_TERMINATING for c in causes):
            reason = Reason.NAMESPACE_TERMINATING
            hint = ("; the namespace is still being deleted (its finalizers run): a later "
                    "pass writes the object once the namespace is gone")
        return KubeError(f"{verb} {ref} failed ({status} {api_reason}): {message}{hint}",
                         status=status, api_reason=api_reason, conflict_with=owners,
                         reason=reason, immutable_fields=immutable)


# ---------------------------------------------------------------------------- leader election
def _without(error: KubeError, hidden: tuple[str, ...]) -> KubeError:
    """The error with none of `hidden` in its message (the same error when there are none)."""
    if hidden:
        error.message = hide_values(error.message, hidden)
        error.args = (error.message,)
    return error


class _StoppableLeaseLock(LeaseLock):
    """The client's LeaseLock bound to our ApiClient; once stopped it neither reads nor renews,
    so the lease runs out and a standby takes over."""

    def __init__(self, name: str, namespace: str, identity: str, api: k8s.ApiClient,
                 stopped: threading.Event):
        super().__init__(name, namespace, identity)
        self.api_instance = k8s.CoordinationV1Api(api)
        self.stopped = stopped

    def get(self, name, namespace):
        if self.stopped.is_set():
            return False, ApiException(status=503, reason="stopping")
        return super().get(name, namespace)

    def create(self, name, namespace, election_record):
        return False if self.stopped.is_set() else super().create(name, namespace,
                                                                   election_record)

    def update(self, name, namespace, updated_record):
        return False if self.stopped.is_set() else super().update(name, namespace,
                                                                   updated_record)


class LeaseElector:
    """Leader election on a coordination.k8s.io/v1 Lease, with the official client's
    `kubernetes.leaderelection`: only the holder writes; a standby takes over within the lease
    duration when the holder stops renewing."""

    def __init__(self, api: k8s.ApiClient, namespace: str, name: str, identity: str, *,
                 lease_duration: int = 15, renew_deadline: int = 10, retry_period: int = 2):
        if not (lease_duration > renew_deadline > 1.2 * retry_period and retry_period >= 1):
            raise GitgateError("leader election needs lease > renew deadline > 1.2 x retry "
                               "period >= 1 second")
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.timings = (lease_duration, renew_deadline, retry_period)
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
