"""The emulated API server's state and request handling (no HTTP here; see server.py)."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import queue
import re
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

import orjson

from tests.kubeapi import dispatch as D
from tests.kubeapi import fields as F
from tests.kubeapi import schema as S
from tests.kubeapi.resources import BUILTIN, KARMADA_WORK, Resource, group_list, resource_list

VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.0-gitgate-emulator",
           "platform": "linux/amd64"}
NOT_FOUND_PAGE = "404 page not found\n"
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                 "(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_LABEL_MESSAGE = ("a valid label must be an empty string or consist of alphanumeric characters, "
                  "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                  "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
KARMADA_POLICIES = {("policy.karmada.io", "PropagationPolicy"): "propagationpolicy",
                    ("policy.karmada.io", "ClusterPropagationPolicy"): "clusterpropagationpolicy"}
# fields the API server refuses to change once set (a 422 "field is immutable")
IMMUTABLE = {("apps", "Deployment"): (("spec", "selector"),),
             ("apps", "StatefulSet"): (("spec", "selector"),),
             ("apps", "DaemonSet"): (("spec", "selector"),),
             ("batch", "Job"): (("spec", "selector"), ("spec", "template"))}
_KARMADA_FINALIZERS = {
    "propagationpolicy": "karmada.io/propagation-policy-controller",
    "clusterpropagationpolicy": "karmada.io/cluster-propagation-policy-controller"}
# finalizers whose controllers the emulator plays, and which it removes at once on delete
CONTROLLER_FINALIZERS = frozenset(_KARMADA_FINALIZERS.values())


class ApiError(Exception):
    def __init__(self, status: int, body: Any):
        super().__init__(str(body))
        self.status = status
        self.body = body


def status_error(code: int, reason: str, message: str, details: dict | None = None) -> ApiError:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return ApiError(code, body)


def _continue_token(listed_at: int, last: tuple[str, ...]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([listed_at, list(last)])).decode()


def not_found(plural: str, name: str) -> ApiError:
    return status_error(404, "NotFound", f'{plural} "{name}" not found',
                        {"name": name, "kind": plural})


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Encoded:
    """An answer already encoded as JSON (a list, encoded under the state's lock)."""
    data: bytes

    def decoded(self) -> Any:
        return orjson.loads(self.data)


@dataclass
class Manager:
    operation: str
    api_version: str
    time: str
    fields: set[F.Path]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any
    user_agent: str = ""
    impersonated: str = ""  # the Impersonate-User header ("": the caller's own identity)
    accept: str = ""  # the Accept header
    # when it came (time.monotonic(): one clock for every process of the machine, so a
    # benchmark can place it against its own events); not part of what a request is
    at: float = field(default_factory=time.monotonic, compare=False)

    @property
    def wants_metadata(self) -> bool:
        """The first media type asked for is JSON as a PartialObjectMetadataList (what
        client-go's metadata client sends; a list then carries each object's metadata)."""
        first = self.accept.split(",")[0]
        params = {p.strip() for p in first.split(";")[1:]}
        return first.split(";")[0].strip() == "application/json" and {
            "as=PartialObjectMetadataList", "g=meta.k8s.io", "v=v1"} <= params

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE") and self.query.get(
            "dryRun") != "All"


@dataclass
class Watcher:
    """A client watching one collection: the events it has not been sent yet."""

    group: str
    plural: str
    namespace: str
    selector: list
    events: queue.Queue
    deadline: float
    closed: bool = False

    def wants(self, group: str, plural: str, namespace: str, obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return ((group, plural) == (self.group, self.plural)
                and (not self.namespace or namespace == self.namespace)
                and all(match(labels) for match in self.selector))


@dataclass
class Stored:
    obj: dict
    managers: dict[str, Manager] = field(default_factory=dict)
    status_owners: dict[str, set[str]] = field(default_factory=dict)  # via `status` applies


@dataclass(frozen=True)
class Target:
    resource: Resource
    namespace: str
    name: str


Key = tuple[str, str, str, str]  # group, plural, namespace, name


class ObjectTable(dict[Key, "Stored"]):
    """The stored objects by key, indexed by collection (group, plural, namespace): a list
    reads and sorts only its own collection, so a server holding 50,000 objects answers a
    list of one namespace's ConfigMaps without sorting them all (the 5,000-bundle bench)."""

    def __init__(self) -> None:
        super().__init__()
        self.collections: dict[tuple[str, str, str], set[Key]] = {}

    def __setitem__(self, key: Key, value: Stored) -> None:
        super().__setitem__(key, value)
        self.collections.setdefault(key[:3], set()).add(key)

    def _forget(self, key: Key) -> None:
        keys = self.collections.get(key[:3])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self.collections[key[:3]]

    def __delitem__(self, key: Key) -> None:
        super().__delitem__(key)
        self._forget(key)

    def pop(self, key: Key, *default: Any) -> Any:  # type: ignore[override]
        if key in self:
            self._forget(key)
        return super().pop(key, *default)

    def in_collection(self, group: str, plural: str, namespace: str) -> list[Key]:
        """The keys of a collection (every namespace's when `namespace` is empty), sorted."""
        if namespace:
            return sorted(self.collections.get((group, plural, namespace), ()))
        return sorted(key for (g, p, _), keys in self.collections.items()
                      if (g, p) == (group, plural) for key in keys)


WATCH_HISTORY = 2048  # changes kept for watches from a resourceVersion (of every collection)


class ApiState:
    """Objects, field managers and served resources of one emulated API server."""

    def __init__(self, crd_establish_delay: float = 0.05, namespace_finalize_delay: float = 0.05):
        self.lock = threading.RLock()
        self.crd_establish_delay = crd_establish_delay
        # the namespace controller empties a Terminating namespace this long after its delete
        self.namespace_finalize_delay = namespace_finalize_delay
        self.terminating: dict[str, float] = {}  # namespace -> when its controller runs
        self.served: dict[tuple[str, str, str], Resource] = {
            (r.group, r.version, r.plural): r for r in BUILTIN}
        self.objects = ObjectTable()
        self.pending_crds: dict[str, float] = {}
        self.schemas: dict[tuple[str, str, str], dict] = {}  # served custom resources' schemas
        self.selected_by: dict[tuple[str, str, str, str], tuple[str, str, str, str]] = {}
        self.claims: dict[tuple[str, str, str, str], set[tuple[str, str, str, str]]] = {}
        self.resource_version = 1000
        self.compacted = 0  # continue tokens of lists begun before this version are expired
        self.requests: list[Request] = []
        self.faults: list = []  # callables(Request) -> None | (status, body)
        # callables(method, path, headers) -> None | a writer of raw bytes: the whole answer,
        # sent as it is on the socket (`tests.support.hostile_answers`), then the connection
        # closed
        self.raw_answers: list = []
        self.watchers: list[Watcher] = []  # open watches
        # the last changes, as kube-apiserver's watch cache keeps them: a watch from a
        # resourceVersion replays those after it; one older than the oldest kept is 410
        self.changes: deque[tuple[int, str, tuple[str, str, str, str], dict]] = deque(
            maxlen=WATCH_HISTORY)
        # authentication and authorization, as a kube-apiserver does them: with
        # `accepted_tokens` set, any other bearer token is 401; `denied` holds (verb, plural)
        # pairs RBAC refuses with the API server's 403 wording
        self.accepted_tokens: set[str] | None = None
        self.tls_clients: list[str] = []  # over TLS: the client certificates' common names
        self.connections_opened = 0  # connections the clients opened, kept-alive ones once
        self.connections_closed = 0  # and those the emulator has closed since
        self.drop_kept_alive = False  # close each connection after its answer, unannounced
        # close a connection, unanswered, when a second request comes on it
        self.close_when_reused = False
        self.close_every_request = False  # and every request, the first on one too
        self.requests_unanswered = 0
        # RBAC for impersonated users, as an allow-list: user -> the namespaces it may use
        # (None: no check); an impersonated user it does not name may do nothing
        self.grants: dict[str, set[str]] | None = None
        self.user = "system:serviceaccount:gitgate-system:gitgate"
        self.denied: set[tuple[str, str]] = set()
        # with `allowed` set, only these (verb, group, plural, namespace or "*") pass RBAC
        self.allowed: set[tuple[str, str, str, str]] | None = None
        self.stall = 0.0  # seconds every request waits before an answer (a hung server)
        # Karmada's bindings: a change of a binding's spec.suspension becomes visible this many
        # seconds after its policy changed (float("inf"): not until lowered again), as a busy
        # controller lags
        self.binding_lag = 0.0
        self.overrides_seen = False  # an override policy was written: Works are kept
        self.pending_bindings: dict[tuple[str, str, str, str], tuple[float, Any]] = {}
        # what each member cluster runs of each bound template (tests/kubeapi/dispatch.py)
        self.members: dict[tuple[str, str, str, str], dict[str, D.Member]] = {}

    # ---------------------------------------------------------------- routing
    def handle(self, method: str, raw_path: str, headers: dict[str, str],
               body: bytes) -> tuple[int, Any]:
        path, _, query_string = raw_path.partition("?")
        query = {k: v[-1] for k, v in parse_qs(query_string).items()}
        content_type = (headers.get("content-type") or "").split(";")[0].strip() or None
        parsed = _parse_body(body, content_type)
        request = Request(method, path, query, content_type, parsed,
                          headers.get("user-agent", ""), headers.get("impersonate-user", ""),
                          headers.get("accept", ""))
        if self.stall:
            time.sleep(self.stall)
        token = (headers.get("authorization") or "").removeprefix("Bearer ").strip()
        if self.accepted_tokens is not None and token not in self.accepted_tokens:
            return 401, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Failure", "message": "Unauthorized",
                         "reason": "Unauthorized", "code": 401}
        refused = self._impersonation_refused(method, path, headers.get("impersonate-user"))
        if refused is not None:
            return refused
        with self.lock:
            self.requests.append(request)
            for fault in list(self.faults):
                injected = fault(request)
                if injected is not None:
                    return injected
            self._establish_due_crds()
            self._finalize_due_namespaces()
            self._settle_bindings()
            try:
                return self._route(request)
            except ApiError as exc:
                return exc.status, exc.body

    def _impersonation_refused(self, method: str, path: str,
                               user: str | None) -> tuple[int, Any] | None:
        """A kube-apiserver with RBAC answers an impersonated request the user may not make
        with 403, naming the user (discovery is open to every authenticated user)."""
        if user is None or self.grants is None or path in ("/api", "/apis") or (
                path.startswith(("/api/v1", "/apis/")) and path.count("/") <= 3):
            return None
        parts = [p for p in path.split("/") if p]
        namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts and (
            parts.index("namespaces") + 1 < len(parts)) else ""
        if namespace and namespace in self.grants.get(user, set()):
            return None
        verb = {"GET": "get", "PATCH": "patch", "DELETE": "delete", "POST": "create",
                "PUT": "update"}.get(method, method.lower())
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        message = f'User "{user}" cannot {verb} this resource{where}'
        return 403, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                     "status": "Failure", "message": message, "reason": "Forbidden",
                     "code": 403}

    def _route(self, request: Request) -> tuple[int, Any]:
        parts = [p for p in request.path.split("/") if p]
        if parts == ["version"]:
            return 200, VERSION
        if parts == ["api"]:
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [
                             {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        if parts == ["apis"]:
            return 200, group_list(list(self.served.values()))
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, NOT_FOUND_PAGE)
        gv = f"{group}/{version}" if group else version
        served = [r for (g, v, _), r in self.served.items() if (g, v) == (group, version)]
        if not served:
            raise ApiError(404, NOT_FOUND_PAGE)
        if not rest:
            return 200, resource_list(gv, served)
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural, name = rest[0], rest[1] if len(rest) > 1 else ""
        resource = self.served.get((group, version, plural))
        if resource is None:
            raise ApiError(404, NOT_FOUND_PAGE)
        target = Target(resource, namespace if resource.namespaced else "", name)
        method = request.method
        watching = method == "GET" and not name and request.query.get("watch") in ("1", "true")
        if len(rest) > 2:  # of the subresources, a custom resource's `status` alone
            if rest[2:] != ["status"] or not resource.status_subresource:
                raise ApiError(404, NOT_FOUND_PAGE)
            self._authorize(method, target, "/status")
            if method == "PATCH" and request.content_type == "application/apply-patch+yaml":
                return self._apply_status(target, request)
            if method == "GET":
                return self._get(target, request)
            raise status_error(405, "MethodNotAllowed", f"{method} is not supported here")
        self._authorize(method, target, verb="watch" if watching else "")
        if watching:
            return self._watch(target, request)
        if method == "GET":
            return self._get(target, request) if name else self._list(target, request)
        if method == "PATCH" and name:
            if request.content_type == "application/apply-patch+yaml":
                return self._apply(target, request)
            return self._merge_patch(target, request)
        if method == "POST" and not name:
            return self._create(target, request)
        if method == "PUT" and name:
            return self._replace(target, request)
        if method == "DELETE" and name:
            return self._delete(target, request)
        raise status_error(405, "MethodNotAllowed", f"{method} is not supported here")

    # ---------------------------------------------------------------- helpers
    def _authorize(self, method: str, target: Target, sub: str = "", verb: str = "") -> None:
        verb = verb or {"PATCH": "patch", "POST": "create", "PUT": "update",
                        "DELETE": "delete"}.get(method, "get" if target.name else "list")
        plural = target.resource.plural + sub
        group = target.resource.group
        permitted = (verb, plural) not in self.denied and (
            self.allowed is None or any((verb, group, plural, where) in self.allowed
                                        for where in ("*", target.namespace)))
        if permitted:
            return
        subject = f'{plural} "{target.name}"' if target.name else plural
        where = (f' in the namespace "{target.namespace}"' if target.namespace
                 else " at the cluster scope")
        raise status_error(403, "Forbidden", (
            f'{subject} is forbidden: User "{self.user}" cannot {verb} resource "{plural}" '
            f'in API group "{target.resource.group}"{where}'),
            {"name": target.name, "kind": plural} if target.name else {"kind": plural})

    def _key(self, target: Target, name: str | None = None) -> tuple[str, str, str, str]:
        return (target.resource.group, target.resource.plural, target.namespace,
                name if name is not None else target.name)

    def _bump(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    def _check_namespace(self, target: Target, creating: bool = True) -> None:
        """The namespace must exist; new content may not go into one being terminated."""
        if not (target.resource.namespaced and target.namespace):
            return
        namespace = self.objects.get(("", "namespaces", "", target.namespace))
        if namespace is None:
            raise status_error(404, "NotFound", f'namespaces "{target.namespace}" not found',
                               {"name": target.namespace, "kind": "namespaces"})
        if creating and namespace.obj["metadata"].get("deletionTimestamp"):
            plural = target.resource.plural
            raise status_error(403, "Forbidden", (
                f'{plural} "{target.name}" is forbidden: unable to create new content in '
                f"namespace {target.namespace} because it is being terminated"),
                {"name": target.name, "kind": plural, "causes": [
                    {"reason": "NamespaceTerminating",
                     "message": f"namespace {target.namespace} is being terminated",
                     "field": "metadata.namespace"}]})

    def _invalid(self, target: Target, name: str, field_path: str, value: Any,
                 detail: str) -> ApiError:
        r = target.resource
        kind = f"{r.kind}.{r.group}" if r.group else r.kind
        shown = json.dumps(value) if isinstance(value, str) else str(value)
        message = f'{kind} "{name}" is invalid: {field_path}: Invalid value: {shown}: {detail}'
        details = {"name": name, "kind": r.kind,
                   "causes": [{"reason": "FieldValueInvalid",
                               "message": f"Invalid value: {shown}: {detail}",
                               "field": field_path}]}
        if r.group:
            details = {"name": name, "group": r.group, "kind": r.kind,
                       "causes": details["causes"]}
        return status_error(422, "Invalid", message, details)

    def _validate(self, target: Target, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
            raise self._invalid(target, name, "metadata.name", name, _NAME_MESSAGE)
        for value in (meta.get("labels") or {}).values():
            if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
                raise self._invalid(target, name, "metadata.labels", value, _LABEL_MESSAGE)
        if (target.resource.group, target.resource.kind) in KARMADA_POLICIES:
            suspension = (obj.get("spec") or {}).get("suspension") or {}
            if suspension.get("dispatching") and (suspension.get("dispatchingOnClusters") or {}
                                                  ).get("clusterNames"):
                webhook = KARMADA_POLICIES[(target.resource.group, target.resource.kind)]
                shown = json.dumps({"dispatching": suspension["dispatching"],
                                    "dispatchingOnClusters": suspension["dispatchingOnClusters"]},
                                   separators=(",", ":"))
                raise status_error(403, "Forbidden", (
                    f'admission webhook "{webhook}.karmada.io" denied the request: '
                    f"spec.suspension.suspension: Invalid value: {shown}: suspension dispatching "
                    "cannot co-exist with dispatchingOnClusters.clusterNames"))

    def _schema_and_body(self, target: Target, obj: dict) -> tuple[dict, dict] | None:
        """A custom resource's fields below the top (what its CRD's schema describes) and
        that schema; None for a kind without one."""
        r = target.resource
        schema = self.schemas.get((r.group, r.version, r.plural))
        if schema is None:
            return None
        return ({k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")},
                schema)

    def _typed_patch(self, target: Target, config: dict) -> None:
        """Server-side apply turns the patch into a typed object first (structured-merge-diff):
        a value of the wrong type fails there, as a 500 without a reason, before any schema
        validation (seen on kube-apiserver 1.36 with Karmada)."""
        r = target.resource
        checked = self._schema_and_body(target, config)
        mismatch = S.type_mismatch(*checked) if checked else None
        if mismatch:
            where = f"{target.namespace}/{target.name}" if target.namespace else target.name
            raise status_error(500, "", f"failed to create typed patch object ({where}; "
                               f"{r.group}/{r.version}, Kind={r.kind}): {mismatch}")

    def _validate_schema(self, target: Target, obj: dict) -> None:
        """A custom resource against its CRD's schema, as the API server validates it."""
        r = target.resource
        checked = self._schema_and_body(target, obj)
        causes = S.validate(*checked) if checked else None
        if causes:
            name = obj["metadata"]["name"]
            raise status_error(422, "Invalid", S.message(f"{r.kind}.{r.group}", name, causes),
                               {"name": name, "group": r.group, "kind": r.kind,
                                "causes": causes})

    def _mutate(self, target: Target, obj: dict, created: bool) -> None:
        """What admission and the registry add: namespace labels, Karmada's defaults."""
        meta = obj["metadata"]
        kind = (target.resource.group, target.resource.kind)
        if kind == ("", "Namespace"):
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
        if kind == ("", "Secret") and isinstance(obj.get("stringData"), dict):
            # stringData is write-only: the API server folds it into data
            encoded = {k: base64.b64encode(str(v).encode()).decode()
                       for k, v in obj.pop("stringData").items()}
            obj["data"] = {**(obj.get("data") or {}), **encoded}
        if kind in KARMADA_POLICIES:
            prefix = KARMADA_POLICIES[kind]
            labels = meta.setdefault("labels", {})
            if created or f"{prefix}.karmada.io/permanent-id" not in labels:
                labels.setdefault(f"{prefix}.karmada.io/permanent-id", str(uuid.uuid4()))
            spec = obj.setdefault("spec", {})
            for key, value in (("conflictResolution", "Abort"), ("preemption", "Never"),
                               ("priority", 0), ("schedulerName", "default-scheduler")):
                spec.setdefault(key, value)
            meta.setdefault("finalizers", [_KARMADA_FINALIZERS[prefix]])

    def _check_immutable(self, target: Target, old: dict, new: dict) -> None:
        for path in IMMUTABLE.get((target.resource.group, target.resource.kind), ()):
            before, after = old, new
            for key in path:
                before = (before or {}).get(key)
                after = (after or {}).get(key)
            if before is not None and after != before:
                raise self._invalid(target, new["metadata"]["name"], ".".join(path),
                                    json.dumps(after, sort_keys=True), "field is immutable")

    def _managed_fields(self, managers: dict[str, Manager]) -> list[dict]:
        return [{"manager": name, "operation": m.operation, "apiVersion": m.api_version,
                 "time": m.time, "fieldsType": "FieldsV1",
                 "fieldsV1": F.to_fields_v1(m.fields)} for name, m in managers.items()]

    def _render(self, stored: Stored) -> dict:
        obj = copy.deepcopy(stored.obj)
        obj["metadata"]["managedFields"] = self._managed_fields(stored.managers)
        return obj

    # ---------------------------------------------------------------- verbs
    def _get(self, target: Target, request: Request) -> tuple[int, Any]:
        stored = self.objects.get(self._key(target))
        if stored is None:
            raise not_found(target.resource.plural, target.name)
        return 200, self._render(stored)

    def _watch(self, target: Target, request: Request) -> tuple[int, Any]:
        """A watch of a collection until `timeoutSeconds` (the server streams it, a JSON
        object per line), as kube-apiserver answers one: without a resourceVersion (or
        "0"), every object of the collection first, as ADDED; from a resourceVersion, the
        changes after it that the history still holds, else a 410 Expired ERROR event."""
        watcher = Watcher(target.resource.group, target.resource.plural, target.namespace,
                          parse_selector(request.query.get("labelSelector", "")),
                          queue.Queue(),
                          time.monotonic() + float(request.query.get("timeoutSeconds") or 60))
        since = request.query.get("resourceVersion") or "0"
        if not since.isdigit():
            raise status_error(400, "BadRequest", f"resourceVersion: invalid value {since!r}")
        if since == "0":
            for key in self.objects.in_collection(watcher.group, watcher.plural,
                                                  watcher.namespace):
                obj = self._render(self.objects[key])
                if watcher.wants(key[0], key[1], key[2], obj):
                    watcher.events.put({"type": "ADDED", "object": obj})
        elif int(since) < self.compacted or (
                len(self.changes) == self.changes.maxlen and int(since) < self.changes[0][0]):
            watcher.events.put({"type": "ERROR", "object": {
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
                "code": 410, "message": f"too old resource version: {since}"}})
            watcher.deadline = time.monotonic()  # the stream ends after the error
        else:
            for version, kind, key, obj in self.changes:
                if version > int(since) and watcher.wants(key[0], key[1], key[2], obj):
                    watcher.events.put({"type": kind, "object": obj})
        self.watchers.append(watcher)
        return 200, watcher

    def _notify(self, kind: str, key: tuple[str, str, str, str], obj: dict) -> None:
        """Tell the watchers of `key`'s collection (ADDED, MODIFIED or DELETED), and keep the
        change for the watches that begin from an earlier resourceVersion."""
        group, plural, namespace, _ = key
        self.changes.append((int(obj["metadata"].get("resourceVersion") or 0), kind, key, obj))
        for watcher in list(self.watchers):
            if watcher.closed:
                self.watchers.remove(watcher)
            elif watcher.wants(group, plural, namespace, obj):
                watcher.events.put({"type": kind, "object": obj})

    def _list(self, target: Target, request: Request) -> tuple[int, Any]:
        """A list, encoded while the lock is held. Each item is a shallow copy of the stored
        object (its metadata copied one level, managedFields added), so nothing is deep-copied:
        at 50,000 objects a deep copy per listed item took most of the emulator's time and the
        bench measured the emulator more than gitgate."""
        selector = parse_selector(request.query.get("labelSelector", ""))
        limit, after, listed_at = self._page_of(request)
        asked = request.query.get("resourceVersion") or ""
        if request.query.get("resourceVersionMatch") == "NotOlderThan" and (
                not asked.isdigit() or int(asked) > self.resource_version):
            # kube-apiserver waits up to 3 s for its watch cache to reach the version, then:
            raise status_error(504, "Timeout", f"Too large resource version: {asked}, "
                               f"current: {self.resource_version}")
        encoded: list[bytes] = []
        more, previous = "", ()
        for key in self.objects.in_collection(target.resource.group, target.resource.plural,
                                              target.namespace or ""):
            if after is not None and list(key) <= after:
                continue
            stored = self.objects[key]
            labels = stored.obj["metadata"].get("labels") or {}
            if not all(match(labels) for match in selector):
                continue
            if limit and len(encoded) == limit:  # one more matches: the client asks again
                more = _continue_token(listed_at, previous)
                break
            previous = key
            meta = {**stored.obj["metadata"],
                    "managedFields": self._managed_fields(stored.managers)}
            if request.wants_metadata:
                item = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": meta}
            else:
                item = {k: v for k, v in stored.obj.items() if k not in ("apiVersion", "kind")}
                item["metadata"] = meta
            encoded.append(orjson.dumps(item))
        list_meta = {"resourceVersion": str(listed_at)}
        if more:
            list_meta["continue"] = more
        if request.wants_metadata:  # as kube-apiserver 1.36 answers: no items is null
            head = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                    "metadata": list_meta}
            if not encoded:
                return 200, Encoded(orjson.dumps({**head, "items": None}))
        else:
            head = {"kind": f"{target.resource.kind}List",
                    "apiVersion": target.resource.group_version, "metadata": list_meta}
        return 200, Encoded(orjson.dumps(head)[:-1] + b',"items":[' + b",".join(encoded)
                            + b"]}")

    def _page_of(self, request: Request) -> tuple[int, list[str] | None, int]:
        """A paged list's `limit` (0: all), the key its `continue` token resumes after (None:
        the first page) and the resourceVersion the list began at. kube-apiserver serves every
        page from the first page's snapshot; this emulator reads the live store, and answers
        410 Expired for a token older than the last `compact()`, as etcd's compaction makes
        the real one do."""
        try:
            limit = max(0, int(request.query.get("limit") or 0))
        except ValueError:
            raise status_error(400, "BadRequest", "limit: must be an integer") from None
        token = request.query.get("continue")
        if not token:
            return limit, None, self.resource_version
        try:
            began, after = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        except (ValueError, TypeError, binascii.Error):
            raise status_error(400, "BadRequest", "continue key is not valid") from None
        if int(began) < self.compacted:
            raise status_error(410, "Expired", "The provided continue parameter is too old to "
                               "display a consistent list result. You can start a new list "
                               "without the continue parameter.")
        return limit, [str(part) for part in after], int(began)

    def compact(self) -> None:
        """What etcd's compaction does to paged lists: every continue token given so far
        expires (the next page of each is answered 410 Expired)."""
        with self.lock:
            self.resource_version += 1  # a list begun from now on is not expired
            self.compacted = self.resource_version

    def _apply(self, target: Target, request: Request) -> tuple[int, Any]:
        manager = request.query.get("fieldManager")
        if not manager:
            raise status_error(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: '
                               "fieldManager: Required value: is required for apply patch",
                               {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                                   {"reason": "FieldValueRequired",
                                    "message": "Required value: is required for apply patch",
                                    "field": "fieldManager"}]})
        config = request.body
        if not isinstance(config, dict):
            raise status_error(400, "BadRequest", "the apply patch is not an object")
        body_name = (config.get("metadata") or {}).get("name")
        if body_name != target.name:
            raise status_error(400, "BadRequest", f"the name of the object ({body_name}) does "
                               f"not match the name on the URL ({target.name})")
        self._typed_patch(target, config)
        self._validate(target, {**config, "metadata": {**config.get("metadata", {}),
                                                       "name": target.name}})
        force = request.query.get("force") == "true"
        dry_run = request.query.get("dryRun") == "All"
        key = self._key(target)
        existing = self.objects.get(key)
        self._check_namespace(target, creating=existing is None)
        lists = target.resource.lists
        if lists.builtin:
            config = F.with_default_protocols(config)
        new_fields = F.field_set(config, lists, target.resource.deduced)
        managers = copy.deepcopy(existing.managers) if existing else {}
        live = copy.deepcopy(existing.obj) if existing else {}
        conflicts: dict[str, list[F.Path]] = {}
        for other, entry in managers.items():
            if other == manager:
                continue
            for path in sorted(new_fields & entry.fields):
                if F.get_at(live, path) != F.get_at(config, path):
                    conflicts.setdefault(other, []).append(path)
        if conflicts and not force:
            raise _conflict_error(conflicts)
        for other, paths in conflicts.items():
            managers[other].fields -= set(paths)
        previous = managers.get(manager)
        if previous is not None:
            others = set().union(*(m.fields for n, m in managers.items() if n != manager))
            for path in sorted(previous.fields - new_fields, key=len, reverse=True):
                if not F.covered(path[:-1] if path[-1] == "." else path, others):
                    F.remove_at(live, path)
        merged = F.merge(live, {k: v for k, v in config.items() if k != "status"}, lists)
        merged.setdefault("metadata", {})
        merged["metadata"]["name"] = target.name
        if target.namespace:
            merged["metadata"]["namespace"] = target.namespace
        managers[manager] = Manager("Apply", config.get("apiVersion", ""),
                                    previous.time if previous and previous.fields == new_fields
                                    else _now(), new_fields)
        managers = {n: m for n, m in managers.items() if m.fields}
        return self._store(target, key, existing, merged, managers, dry_run)

    def _apply_status(self, target: Target, request: Request) -> tuple[int, Any]:
        """Server-side apply to the `status` subresource: the status alone changes (its
        fields owned by one manager each: what a manager set before and no longer sets goes,
        at the top level of the status), the object must exist, the generation stays."""
        key = self._key(target)
        existing = self.objects.get(key)
        if existing is None:
            raise not_found(target.resource.plural, target.name)
        manager = _manager_of(request)
        config = request.body if isinstance(request.body, dict) else {}
        status = config.get("status") if isinstance(config.get("status"), dict) else {}
        live = copy.deepcopy(existing.obj)
        owned = dict(existing.status_owners)
        current = dict(live.get("status") or {})
        for field_name in owned.get(manager, set()) - set(status):
            if not any(field_name in fields for other, fields in owned.items()
                       if other != manager):
                current.pop(field_name, None)
        current.update(copy.deepcopy(status))
        owned[manager] = set(status)
        live["status"] = current
        dry_run = request.query.get("dryRun") == "All"
        if dry_run:
            return 200, self._render(Stored(live, existing.managers, owned))
        if live == existing.obj:
            return 200, self._render(existing)
        live["metadata"]["resourceVersion"] = self._bump()
        self.objects[key] = Stored(live, existing.managers, owned)
        self._notify("MODIFIED", key, self._render(self.objects[key]))
        return 200, self._render(self.objects[key])

    def _store(self, target: Target, key, existing: Stored | None, obj: dict,
               managers: dict[str, Manager], dry_run: bool) -> tuple[int, Any]:
        created = existing is None
        self._mutate(target, obj, created)
        self._validate(target, obj)
        self._validate_schema(target, obj)
        meta = obj["metadata"]
        if existing is not None and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            if dry_run:
                return 200, self._render(Stored(obj, managers))
            del self.objects[key]  # its last finalizer is gone: deletion completes
            return 200, self._render(Stored(obj, managers))
        if existing is not None:
            old = existing.obj
            self._check_immutable(target, old, obj)
            same_fields = {n: m.fields for n, m in existing.managers.items()} == {
                n: m.fields for n, m in managers.items()}
            if _content(old) == _content(obj) and same_fields:
                return 200, self._render(existing)
            for kept in ("uid", "creationTimestamp", "generation"):
                if kept in old["metadata"]:
                    meta[kept] = old["metadata"][kept]
            if "spec" in obj and obj.get("spec") != old.get("spec"):
                meta["generation"] = int(old["metadata"].get("generation", 0)) + 1
        else:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = _now()
            if "spec" in obj and (target.resource.kind not in ("Namespace",)):
                meta["generation"] = 1
        stored = Stored(obj, managers, existing.status_owners if existing else {})
        if dry_run:
            rendered = self._render(stored)
            if created:
                rendered["metadata"].pop("resourceVersion", None)
            return (201 if created else 200), rendered
        meta["resourceVersion"] = self._bump()
        self.objects[key] = stored
        self._notify("ADDED" if created else "MODIFIED", key, self._render(stored))
        self._karmada_claim(target, key)
        if (target.resource.group, target.resource.kind) in D.OVERRIDE_KINDS:
            self.overrides_seen = True
            self._redispatch_all()
        if target.resource.kind == "CustomResourceDefinition" and created:
            self.pending_crds[meta["name"]] = time.monotonic() + self.crd_establish_delay
        elif target.resource.kind == "CustomResourceDefinition" and (
                meta["name"] not in self.pending_crds):
            self._establish(stored.obj)  # a served CRD's new schema: kube-apiserver serves
            # it once its CRD handler sees the change (the emulator: at once)
        return (201 if created else 200), self._render(stored)

    def _merge_patch(self, target: Target, request: Request) -> tuple[int, Any]:
        key = self._key(target)
        existing = self.objects.get(key)
        if existing is None:
            raise not_found(target.resource.plural, target.name)
        if not isinstance(request.body, dict):
            raise status_error(400, "BadRequest", "the patch is not an object")
        manager = _manager_of(request)
        patched = _merge_patch(copy.deepcopy(existing.obj), request.body)
        changed = {p for p in F.field_set(request.body, target.resource.lists)
                   if F.get_at(existing.obj, p) != F.get_at(patched, p)}
        managers = copy.deepcopy(existing.managers)
        for entry in managers.values():
            entry.fields -= changed
        entry = managers.get(manager) or Manager("Update", patched.get("apiVersion", ""),
                                                 _now(), set())
        entry.fields |= {p for p in changed if F.get_at(patched, p) is not F.MISSING}
        managers[manager] = entry
        managers = {n: m for n, m in managers.items() if m.fields}
        return self._store(target, key, existing, patched, managers,
                           request.query.get("dryRun") == "All")

    def _create(self, target: Target, request: Request) -> tuple[int, Any]:
        obj = request.body
        if not isinstance(obj, dict):
            raise status_error(400, "BadRequest", "the body is not an object")
        name = (obj.get("metadata") or {}).get("name", "")
        named = Target(target.resource, target.namespace, name)
        self._validate(named, obj)
        self._check_namespace(named, creating=True)
        key = self._key(named)
        if key in self.objects:
            raise status_error(409, "AlreadyExists",
                               f'{target.resource.plural} "{name}" already exists',
                               {"name": name, "kind": target.resource.plural})
        manager = _manager_of(request)
        obj = copy.deepcopy(obj)
        if target.namespace:
            obj["metadata"]["namespace"] = target.namespace
        managers = {manager: Manager("Update", obj.get("apiVersion", ""), _now(),
                                     F.field_set(obj, target.resource.lists))}
        return self._store(named, key, None, obj, managers, request.query.get("dryRun") == "All")

    def _replace(self, target: Target, request: Request) -> tuple[int, Any]:
        key = self._key(target)
        existing = self.objects.get(key)
        if existing is None:
            raise not_found(target.resource.plural, target.name)
        obj = copy.deepcopy(request.body)
        sent_version = (obj.get("metadata") or {}).get("resourceVersion")
        if sent_version and sent_version != existing.obj["metadata"].get("resourceVersion"):
            r = target.resource
            kind = f"{r.plural}.{r.group}" if r.group else r.plural
            raise status_error(409, "Conflict", f'Operation cannot be fulfilled on {kind} '
                               f'"{target.name}": the object has been modified; please apply '
                               "your changes to the latest version and try again",
                               {"name": target.name, "group": r.group, "kind": r.plural})
        for volatile in ("managedFields", "resourceVersion"):
            obj.setdefault("metadata", {}).pop(volatile, None)
        manager = _manager_of(request)
        managers = copy.deepcopy(existing.managers)
        managers[manager] = Manager("Update", obj.get("apiVersion", ""), _now(),
                                    F.field_set(obj, target.resource.lists))
        return self._store(target, key, existing, obj, managers, False)

    def _delete(self, target: Target, request: Request) -> tuple[int, Any]:
        key = self._key(target)
        stored = self.objects.get(key)
        if stored is None:
            raise not_found(target.resource.plural, target.name)
        if request.query.get("dryRun") == "All":
            return 200, self._render(stored)
        meta = stored.obj["metadata"]
        kind = target.resource.kind
        if meta.get("deletionTimestamp"):  # already being deleted
            return 200, self._render(stored)
        kept = _finalize_controlled(meta)
        if kind == "Namespace" or kept:
            # Terminating: a Namespace until its controller emptied it, anything else until
            # whoever owns its finalizers removes them
            meta["deletionTimestamp"] = _now()
            meta["resourceVersion"] = self._bump()
            if kind == "Namespace":
                stored.obj["status"] = {"phase": "Terminating"}
                self.terminating[target.name] = (time.monotonic()
                                                 + self.namespace_finalize_delay)
            return 200, self._render(stored)
        rendered = self._render(stored)
        self._remove(key, kind)
        if (target.resource.group, kind) in D.OVERRIDE_KINDS:
            self._redispatch_all()
        options = request.body if isinstance(request.body, dict) else {}
        if kind == "CustomResourceDefinition":
            self._forget_crd(stored.obj)
        elif options.get("propagationPolicy") != "Foreground":
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "details": {
                             "name": target.name, "kind": target.resource.plural,
                             "uid": stored.obj["metadata"]["uid"]}}
        rendered["metadata"]["deletionTimestamp"] = _now()
        rendered["metadata"]["resourceVersion"] = self._bump()
        return 200, rendered

    def _remove(self, key: tuple[str, str, str, str], kind: str) -> None:
        gone = self._render(self.objects.pop(key))
        gone["metadata"]["resourceVersion"] = self._bump()  # a deletion is a change too
        self._notify("DELETED", key, gone)
        if (key[0], kind) in KARMADA_POLICIES:
            self._let_go(key, [])
        binding = self.objects.get(self._binding_key(key, kind)) if kind else None
        uid = gone["metadata"].get("uid")
        if binding is not None and any(o.get("uid") == uid for o in binding.obj[
                "metadata"].get("ownerReferences") or []):
            # the garbage collection of the template's binding (claimed or not), and its Works
            self.objects.pop(self._binding_key(key, kind), None)
            self.members.pop(self._binding_key(key, kind), None)

    def _finalize_due_namespaces(self) -> None:
        """The namespace controller: delete what a Terminating namespace holds; the namespace
        goes once nothing is left (objects with finalizers keep it Terminating)."""
        now = time.monotonic()
        kinds = {(r.group, r.plural): r.kind for r in self.served.values()}
        for namespace, due in list(self.terminating.items()):
            if due > now:
                continue
            inside = [k for k in self.objects if k[2] == namespace]
            for key in inside:
                if key not in self.objects:  # went with its template (a binding)
                    continue
                meta = self.objects[key].obj["metadata"]
                if _finalize_controlled(meta):
                    meta.setdefault("deletionTimestamp", _now())
                else:
                    self._remove(key, kinds.get((key[0], key[1]), ""))
            if not any(k[2] == namespace for k in self.objects):
                self.objects.pop(("", "namespaces", "", namespace), None)
                del self.terminating[namespace]

    def _karmada_claim(self, target: Target, key: tuple[str, str, str, str]) -> None:
        """Karmada's controller marks every resource template a policy selects with the
        policy's permanent-id label and name annotations. An index from selected template to
        policy keeps this linear: only the stored object and what it selects are looked at."""
        if (target.resource.group, target.resource.kind) in KARMADA_POLICIES:
            selected = self._selected(key)
            for template_key in selected:
                holder = self.selected_by.get(template_key)
                if holder not in (None, key) and template_key in self._selected(holder):
                    continue  # no preemption: it stays with the policy that claimed it
                self._hold(template_key, key)
                self._claim(template_key, key)
                self._bind(template_key, key)
            self._let_go(key, selected)
        elif key in self.selected_by:
            self._claim(key, self.selected_by[key])
            self._bind(key, self.selected_by[key])

    def _selected(self, policy_key: tuple[str, str, str, str]
                  ) -> list[tuple[str, str, str, str]]:
        """The templates a stored policy's resourceSelectors name (none once it is gone)."""
        policy = self.objects.get(policy_key)
        if policy is None:
            return []
        keys = (self._template_key(selector, policy_key[2])
                for selector in (policy.obj.get("spec") or {}).get("resourceSelectors") or [])
        return [k for k in keys if k is not None]

    def _let_go(self, policy_key: tuple[str, str, str, str],
                still: list[tuple[str, str, str, str]]) -> None:
        """Karmada's detector on a policy's update or deletion: the templates it claimed and no
        longer selects lose its claim, and go to another policy that selects them (their
        binding takes that policy's placement and suspension in one update)."""
        for template_key in sorted(self.claims.get(policy_key, set()) - set(still)):
            self.claims[policy_key].discard(template_key)
            del self.selected_by[template_key]
            self._unclaim(template_key)
            other = next((k for k in sorted(self.objects) if (k[0], self.objects[k].obj.get(
                "kind")) in KARMADA_POLICIES and template_key in self._selected(k)), None)
            if other is not None:
                self._hold(template_key, other)
                self._claim(template_key, other)
                self._bind(template_key, other, at_once=True)

    def _hold(self, template_key: tuple[str, str, str, str],
              policy_key: tuple[str, str, str, str]) -> None:
        was = self.selected_by.get(template_key)
        if was is not None:
            self.claims.get(was, set()).discard(template_key)
        self.selected_by[template_key] = policy_key
        self.claims.setdefault(policy_key, set()).add(template_key)

    def _unclaim(self, template_key: tuple[str, str, str, str]) -> None:
        template = self.objects.get(template_key)
        if template is None:
            return
        meta = template.obj["metadata"]
        for part in ("labels", "annotations"):
            for name in [n for n in meta.get(part) or {} if n.split(".", 1)[0] in (
                    "propagationpolicy", "clusterpropagationpolicy")]:
                del meta[part][name]
        meta["resourceVersion"] = self._bump()

    def _claim(self, template_key: tuple[str, str, str, str],
               policy_key: tuple[str, str, str, str]) -> None:
        template, policy = self.objects.get(template_key), self.objects.get(policy_key)
        if template is None or policy is None:
            return
        prefix = "propagationpolicy" if policy_key[1] == "propagationpolicies" else \
            "clusterpropagationpolicy"
        meta = policy.obj["metadata"]
        permanent_id = (meta.get("labels") or {}).get(f"{prefix}.karmada.io/permanent-id")
        t_meta = template.obj["metadata"]
        labels = t_meta.setdefault("labels", {})
        if labels.get(f"{prefix}.karmada.io/permanent-id") == permanent_id:
            return
        labels[f"{prefix}.karmada.io/permanent-id"] = permanent_id
        annotations = t_meta.setdefault("annotations", {})
        annotations[f"{prefix}.karmada.io/name"] = meta["name"]
        if policy_key[2]:
            annotations[f"{prefix}.karmada.io/namespace"] = policy_key[2]
        template.managers["karmada-controller-manager"] = Manager(
            "Update", template.obj.get("apiVersion", ""), _now(), {
                ("f:metadata", "f:labels", f"f:{prefix}.karmada.io/permanent-id"),
                *{("f:metadata", "f:annotations", f"f:{k}")
                  for k in annotations if k.startswith(prefix)}})
        t_meta["resourceVersion"] = self._bump()

    # ---------------------------------------------------------------- Karmada's bindings
    def serve_karmada_bindings(self) -> None:
        with self.lock:
            for resource in KARMADA_WORK:
                self.served[(resource.group, resource.version, resource.plural)] = resource

    def _binding_key(self, template_key: tuple[str, str, str, str],
                     kind: str) -> tuple[str, str, str, str]:
        """Karmada's names.GenerateBindingName: `<name>-<kind>` lower-cased, ':' as '.'."""
        name = f"{template_key[3].replace(':', '.')}-{kind}".lower()
        if template_key[2]:
            return ("work.karmada.io", "resourcebindings", template_key[2], name)
        return ("work.karmada.io", "clusterresourcebindings", "", name)

    def _bind(self, template_key: tuple[str, str, str, str],
              policy_key: tuple[str, str, str, str], at_once: bool = False) -> None:
        """Keep the template's binding as Karmada's detector does: created with the claiming
        policy's spec.suspension, which later follows the policy after `binding_lag` (`at_once`:
        a binding another policy claims now takes its suspension with its placement)."""
        template, policy = self.objects.get(template_key), self.objects.get(policy_key)
        if ("work.karmada.io", "v1alpha2", "resourcebindings") not in self.served or (
                template is None or policy is None):
            return
        t_meta = template.obj["metadata"]
        key = self._binding_key(template_key, template.obj["kind"])
        suspension = copy.deepcopy((policy.obj.get("spec") or {}).get("suspension"))
        stored = self.objects.get(key)
        if stored is None:
            kind = "ResourceBinding" if key[2] else "ClusterResourceBinding"
            meta = {"name": key[3], "uid": str(uuid.uuid4()), "creationTimestamp": _now(),
                    "generation": 1, "resourceVersion": self._bump(),
                    "ownerReferences": [{"apiVersion": template.obj.get("apiVersion"),
                                         "kind": template.obj["kind"], "name": t_meta["name"],
                                         "uid": t_meta.get("uid"), "controller": True}]}
            if key[2]:
                meta["namespace"] = key[2]
            spec: dict[str, Any] = {"resource": {
                "apiVersion": template.obj.get("apiVersion"), "kind": template.obj["kind"],
                "name": t_meta["name"], "uid": t_meta.get("uid"),
                "resourceVersion": t_meta.get("resourceVersion")}}
            if key[2]:
                spec["resource"]["namespace"] = key[2]
            if suspension:
                spec["suspension"] = suspension
            self.objects[key] = Stored({"apiVersion": "work.karmada.io/v1alpha2", "kind": kind,
                                        "metadata": meta, "spec": spec},
                                       {"karmada-controller-manager": Manager(
                                           "Update", "work.karmada.io/v1alpha2", _now(), set())})
            self._schedule(key, policy.obj)
            return
        stored.obj["spec"]["resource"]["resourceVersion"] = t_meta.get("resourceVersion")
        if at_once:
            stored.obj["spec"].pop("suspension", None)
            if suspension:
                stored.obj["spec"]["suspension"] = suspension
            self.pending_bindings.pop(key, None)
        self._schedule(key, policy.obj)
        if stored.obj["spec"].get("suspension") != suspension:
            pending = self.pending_bindings.get(key)
            if pending is None or pending[1] != suspension:
                self.pending_bindings[key] = (time.monotonic(), suspension)
        else:
            self.pending_bindings.pop(key, None)

    def _settle_bindings(self) -> None:
        now = time.monotonic()
        for key, (changed_at, suspension) in list(self.pending_bindings.items()):
            if changed_at + self.binding_lag > now:
                continue
            del self.pending_bindings[key]
            stored = self.objects.get(key)
            if stored is None:
                continue
            spec = stored.obj["spec"]
            spec.pop("suspension", None)
            if suspension:
                spec["suspension"] = suspension
            stored.obj["metadata"]["generation"] += 1
            stored.obj["metadata"]["resourceVersion"] = self._bump()
            self._dispatch(key)

    def _schedule(self, key: tuple[str, str, str, str], policy: dict) -> None:
        """The scheduler places the binding on the policy's clusters; then dispatch."""
        clusters = D.placement_clusters(policy, lambda: [
            k[3] for k in self.objects if k[:2] == ("cluster.karmada.io", "clusters")])
        self.objects[key].obj["spec"]["clusters"] = [{"name": c} for c in clusters]
        self._dispatch(key)

    def _dispatch(self, key: tuple[str, str, str, str]) -> None:
        """The execution and work-status controllers: members not suspended get the
        template; the binding's status says what each member runs."""
        binding = self.objects[key].obj
        resource = binding["spec"]["resource"]
        template_key = self._template_key(resource, resource.get("namespace", ""))
        stored = self.objects.get(template_key) if template_key else None
        if stored is None:
            return
        template = stored.obj
        clusters = [c["name"] for c in binding["spec"].get("clusters") or []]
        members = D.dispatch(self.members.get(key, {}), template, clusters,
                             binding["spec"].get("suspension"))
        if template.get("kind") == "ConfigMap":
            held = D.suspended_on(binding["spec"].get("suspension"), clusters)
            policies = self._override_policies() if self.overrides_seen else []
            for cluster, member in members.items():
                if cluster not in held:
                    member.data = D.runs_on(template, policies, cluster)
        self.members[key] = members
        self._write_works(key, template, clusters, binding["spec"].get("suspension"))
        status = D.binding_status(members, clusters)
        if binding.get("status") != status:
            binding["status"] = status
            binding["metadata"]["resourceVersion"] = self._bump()

    def _write_works(self, key: tuple[str, str, str, str], template: dict,
                     clusters: list[str], suspension: Any) -> None:
        """Karmada's binding controller: a Work per cluster in `karmada-es-<cluster>`,
        labelled with the binding's permanent id, annotated with the overrides applied to
        the template for that cluster. A suspended cluster's Work keeps what it had."""
        if not self.overrides_seen:  # nothing to record: Works cost nothing until then
            return
        binding_meta = self.objects[key].obj["metadata"]
        binding_id = binding_meta.setdefault("labels", {}).setdefault(
            D.BINDING_ID_LABEL, str(uuid.uuid4()))
        held = D.suspended_on(suspension, clusters)
        policies = self._override_policies()
        for cluster in clusters:
            work_key = ("work.karmada.io", "works", f"karmada-es-{cluster}",
                        f"{binding_meta['name']}-{binding_id[:8]}")
            if cluster in held and work_key in self.objects:
                continue
            annotations = D.applied_overrides(template, policies, cluster)
            stored = self.objects.get(work_key)
            if stored is not None and stored.obj["metadata"].get("annotations") == annotations:
                continue
            meta = {"name": work_key[3], "namespace": work_key[2], "uid": str(uuid.uuid4()),
                    "generation": 1, "creationTimestamp": _now(),
                    "labels": {D.BINDING_ID_LABEL: binding_id}, "annotations": annotations}
            if stored is not None:
                meta["generation"] = stored.obj["metadata"].get("generation", 1) + 1
            meta["resourceVersion"] = self._bump()
            self.objects[work_key] = Stored(
                {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": meta,
                 "spec": {"suspendDispatching": False}},
                {"karmada-controller-manager": Manager("Update", "work.karmada.io/v1alpha1",
                                                       _now(), set())})

    def _override_policies(self) -> list[dict]:
        return [stored.obj for k, stored in self.objects.items()
                if k[:2] in (("policy.karmada.io", "overridepolicies"),
                             ("policy.karmada.io", "clusteroverridepolicies"))]

    def member_configmaps(self, cluster: str, namespace: str) -> list[dict]:
        """The ConfigMaps of `namespace` a member cluster runs, as Karmada dispatched them
        (for tests): each bound template's `data` as the member last received it."""
        with self.lock:
            out = []
            for key, members in self.members.items():
                binding = self.objects.get(key)
                member = members.get(cluster)
                if binding is None or member is None or key[2] != namespace:
                    continue
                resource = binding.obj["spec"]["resource"]
                if resource.get("kind") == "ConfigMap":
                    out.append({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": resource["name"], "namespace": namespace},
                                "data": member.data})
            return out

    def _redispatch_all(self) -> None:
        """An override policy changed: Karmada's binding controller renders every Work
        again (each then carries the overrides now in force)."""
        for key in list(self.members):
            if key in self.objects:
                self._dispatch(key)

    def report(self, namespace: str, kind: str, name: str, cluster: str, *,
               health: str | None = None, applied: bool | None = None,
               message: str | None = None, status: dict | None = None) -> None:
        """A member's controllers report on a template's object (for tests): its health,
        that applying it failed with `message`, or its `status` (a Job's conditions, as
        Karmada reflects them)."""
        with self.lock:
            key = self._binding_key(("", "", namespace, name), kind)
            member = self.members[key][cluster]
            if health is not None:
                member.health = health
            if applied is not None:
                member.applied = applied
            if message is not None:
                member.message = message
            if status is not None:
                member.status = status
            binding = self.objects[key].obj
            binding["status"] = D.binding_status(
                self.members[key], [c["name"] for c in binding["spec"].get("clusters") or []])
            binding["metadata"]["resourceVersion"] = self._bump()

    def binding(self, template_namespace: str, template_kind: str,
                template_name: str) -> dict | None:
        """The binding Karmada keeps for a template (for tests)."""
        key = self._binding_key(("", "", template_namespace, template_name), template_kind)
        return self.object(*key)

    @property
    def by_kind(self) -> dict[tuple[str, str], Resource]:
        return {(r.group, r.kind): r for r in self.served.values()}

    def _template_key(self, selector: dict,
                      policy_namespace: str) -> tuple[str, str, str, str] | None:
        group = str(selector.get("apiVersion", "")).rpartition("/")[0]
        resource = self.by_kind.get((group, str(selector.get("kind"))))
        if resource is None:
            return None
        namespace = (selector.get("namespace") or policy_namespace) if resource.namespaced else ""
        return (group, resource.plural, namespace, str(selector.get("name", "")))

    # ---------------------------------------------------------------- CRDs
    def install_crd(self, crd: dict) -> None:
        """Serve a CRD at once, as a control plane that ships it (Karmada's policies)."""
        with self.lock:
            target = Target(self.served[("apiextensions.k8s.io", "v1",
                                         "customresourcedefinitions")], "",
                            crd["metadata"]["name"])
            key = self._key(target)
            obj = copy.deepcopy(crd)
            obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_now(),
                                   resourceVersion=self._bump(), generation=1)
            self.objects[key] = Stored(obj, {})
            self._establish(obj)

    def _establish_due_crds(self) -> None:
        now = time.monotonic()
        for name, due in list(self.pending_crds.items()):
            if due <= now:
                del self.pending_crds[name]
                stored = self.objects.get(("apiextensions.k8s.io", "customresourcedefinitions",
                                           "", name))
                if stored is not None:
                    self._establish(stored.obj)
                    stored.obj["metadata"]["resourceVersion"] = self._bump()

    def _establish(self, crd: dict) -> None:
        spec = crd["spec"]
        names = spec["names"]
        for version in spec.get("versions", []):
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            if version.get("served", True):
                self.served[(spec["group"], version["name"], names["plural"])] = Resource(
                    spec["group"], version["name"], names["kind"], names["plural"],
                    spec.get("scope", "Namespaced") == "Namespaced",
                    tuple(names.get("shortNames", [])),
                    bool(schema.get("x-kubernetes-preserve-unknown-fields")),
                    F.ListKeys.of_schema(F.list_maps_of(schema)),
                    "status" in (version.get("subresources") or {}))
                self.schemas[(spec["group"], version["name"], names["plural"])] = schema
        when = _now()
        crd["status"] = {"acceptedNames": {k: names[k] for k in ("plural", "singular", "kind",
                                                                  "listKind") if k in names},
                         "conditions": [
                             {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                              "message": "no conflicts found", "lastTransitionTime": when},
                             {"type": "Established", "status": "True",
                              "reason": "InitialNamesAccepted",
                              "message": "the initial names have been accepted",
                              "lastTransitionTime": when}]}

    def _forget_crd(self, crd: dict) -> None:
        spec = crd["spec"]
        for version in spec.get("versions", []):
            self.served.pop((spec["group"], version["name"], spec["names"]["plural"]), None)
        for key in [k for k in self.objects if (k[0], k[1]) == (spec["group"],
                                                                 spec["names"]["plural"])]:
            del self.objects[key]

    # ---------------------------------------------------------------- for tests
    def writes(self) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.is_write]

    def object(self, group: str, plural: str, namespace: str, name: str) -> dict | None:
        with self.lock:
            stored = self.objects.get((group, plural, namespace, name))
            return self._render(stored) if stored else None


def _finalize_controlled(meta: dict) -> list[str]:
    """A controller that owns a finalizer (Karmada's, for its policies) finalizes at once;
    the finalizers left are someone else's to remove."""
    kept = [f for f in meta.get("finalizers") or [] if f not in CONTROLLER_FINALIZERS]
    if kept:
        meta["finalizers"] = kept
    else:
        meta.pop("finalizers", None)
    return kept


def _manager_of(request: Request) -> str:
    """The field manager of a non-apply write: the query's, else the client's user agent."""
    return request.query.get("fieldManager") or request.user_agent.split("/")[0] or "unknown"


def _content(obj: dict) -> dict:
    meta = {k: v for k, v in obj["metadata"].items()
            if k not in ("resourceVersion", "managedFields", "generation", "uid",
                         "creationTimestamp")}
    return {**obj, "metadata": meta}


def _conflict_error(conflicts: dict[str, list[F.Path]]) -> ApiError:
    total = sum(len(p) for p in conflicts.values())
    causes = [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}"',
               "field": F.describe(p)} for m, paths in conflicts.items() for p in paths]
    if total == 1:
        (manager, (path,)), = conflicts.items()
        message = f'Apply failed with 1 conflict: conflict with "{manager}": {F.describe(path)}'
    else:
        lines = []
        for manager, paths in conflicts.items():
            lines.append(f'conflicts with "{manager}":')
            lines += [f"- {F.describe(p)}" for p in paths]
        message = f"Apply failed with {total} conflicts: " + "\n".join(lines)
    return status_error(409, "Conflict", message, {"causes": causes})


def _merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


def _parse_body(body: bytes, content_type: str | None) -> Any:
    if not body:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        from ruamel.yaml import YAML
        return YAML(typ="safe").load(body.decode("utf-8"))


def parse_selector(text: str) -> list:
    """Label selector terms as predicates over a label dict (=, ==, !=, in, notin, exists)."""
    terms = []
    for raw in re.findall(r"[^,(]+(?:\([^)]*\))?", text):
        term = raw.strip()
        if term:
            terms.append(_term(term))
    return terms


def _term(term: str):
    m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", term)
    if m:
        key, wanted = m.group(1), {v.strip() for v in m.group(3).split(",")}
        inside = m.group(2) == "in"
        return lambda labels: (labels.get(key) in wanted) == inside
    m = re.match(r"^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$", term)
    if m:
        key, op, value = m.groups()
        return lambda labels: (labels.get(key) == value) != (op == "!=")
    if term.startswith("!"):
        absent = term[1:].strip()
        return lambda labels: absent not in labels
    return lambda labels: term in labels
