"""`KubeCluster`: Kubernetes objects read and written by manifest over the transport, with
discovery for their paths. Writes are server-side apply patches
(`application/apply-patch+yaml`, field manager `gitgate`); discovery is refreshed after CRDs
are applied. The `ClusterPort` of a real API server."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from gitgate.apiserver.apierrors import (
    RetryPolicy,
    Timeouts,
    message_of,
    object_error,
    secret_values,
    without,
)
from gitgate.apiserver.discovery import ApiResource, Discovery
from gitgate.apiserver.transport import JSON, Transport, impersonating
from gitgate.apply.changeset import Applied
from gitgate.errors import ContinueExpired, KubeError, Reason
from gitgate.model import FIELD_MANAGER, Manifest, ObjectRef

PAGE = 500  # objects per answer of a list (client-go's pager and kubectl ask as many)
# a list of metadata alone: an item is a tenth of an object's bytes or less, and the no-op
# pass lists the metadata of every record (10 answers of 500 at 5,000 bundles cost 60 ms more
# than one on the emulator)
METADATA_PAGE = 10 * PAGE



class Page(NamedTuple):
    """One answer to a list."""

    items: list[Manifest]
    token: str  # the next page's continue token ("": the last page)
    version: str  # the list's resourceVersion


# the metadata of a list's objects, else (a server without it) the list itself
METADATA_ACCEPT = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                   "application/json")

# An apply's field validation. Under server-side apply a field the schema does not declare is
# refused whatever the directive (`field not declared in schema`, seen on the harness for
# Ignore, Warn and none). What Warn (the server's default) adds is a second, strict YAML
# parse of the body to find duplicate keys, and warnings gitgate never read. Its bodies are
# serialized from maps, which cannot hold a key twice, so that parse can find nothing (its
# cost did not show in the bench's turns: bench/results/history.md).
APPLY_FIELD_VALIDATION = "Ignore"


class KubeCluster:
    """Reads and writes Kubernetes objects by manifest."""

    def __init__(self, api: Any, *, timeouts: Timeouts | None = None,
                 retry: RetryPolicy | None = None):
        self.transport = Transport(api, timeouts=timeouts, retry=retry)
        self.api, self.timeouts, self.retry = api, self.transport.timeouts, self.transport.retry
        self.server = self.transport.server
        self.discovery = Discovery(lambda method, path: self.transport.request(method, path))

    def impersonating(self, user: str) -> KubeCluster:
        """The same cluster, every request sent as `user` (its discovery is shared)."""
        clone = copy.copy(self)
        clone.api = impersonating(self.api, user)
        clone.transport = Transport(clone.api, timeouts=self.timeouts, retry=self.retry,
                                    observer=self.transport.observer)
        return clone

    def request(self, method: str, path: str, *, query: dict[str, str] | None = None,
                body: Any = None, content_type: str | None = None,
                accept: str = "application/json") -> tuple[int, Any]:
        return self.transport.request(method, path, query=query, body=body,
                                      content_type=content_type, accept=accept)

    def resource_for(self, api_version: str, kind: str) -> ApiResource:
        return self.discovery.resource_for(api_version, kind)

    def scope_of(self, api_version: str, kind: str) -> bool | None:
        return self.discovery.scope_of(api_version, kind)

    def path_for(self, api_version: str, kind: str, namespace: str, name: str = "") -> str:
        return self.discovery.path_for(api_version, kind, namespace, name)

    def refresh_discovery(self) -> None:
        self.discovery.refresh()

    # ------------------------------------------------------------ verbs
    def apply(self, obj: Manifest, *, dry_run: bool = False, force: bool = False,
              manager: str = FIELD_MANAGER, subresource: str = "") -> Applied:
        """Server-side apply of `obj` (to its `subresource`, such as `status`, when named)."""
        ref = ObjectRef.of(obj)
        meta = obj["metadata"]
        path = self.path_for(obj["apiVersion"], obj["kind"], meta.get("namespace", ""),
                             meta["name"]) + (f"/{subresource}" if subresource else "")
        query = {"fieldManager": manager, "fieldValidation": APPLY_FIELD_VALIDATION}
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
                raise without(exc, hidden) from None
            raise
        if status >= 300:
            raise without(object_error(ref, "apply", status, body), hidden)
        return Applied(body, created=status == 201)

    def create(self, obj: Manifest, *, manager: str = FIELD_MANAGER) -> bool:
        """`obj` created by a POST; False when it exists already (the answer 409
        AlreadyExists, as when a POST whose answer was lost is sent again). Raises KubeError."""
        ref = ObjectRef.of(obj)
        meta = obj["metadata"]
        path = self.path_for(obj["apiVersion"], obj["kind"], meta.get("namespace", ""))
        hidden = secret_values(obj)
        try:
            status, body = self.request("POST", path, body=obj, content_type=JSON, query={
                "fieldManager": manager, "fieldValidation": APPLY_FIELD_VALIDATION})
        except KubeError as exc:
            if hidden:
                raise without(exc, hidden) from None
            raise
        if status == 409 and isinstance(body, dict) and body.get("reason") == "AlreadyExists":
            return False
        if status >= 300:
            raise without(object_error(ref, "create", status, body), hidden)
        return True

    def _served_path(self, api_version: str, kind: str, namespace: str, name: str) -> str | None:
        """The object's path, or None when its type is not served (its CRD is gone, and so is
        every object of it)."""
        try:
            return self.path_for(api_version, kind, namespace, name)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def watch(self, api_version: str, kind: str, namespace: str = "",
              label_selector: str = "", seconds: int = 60,
              resource_version: str = "") -> Iterator[tuple[str, Manifest]]:
        """The changes of a collection as they happen (ADDED, MODIFIED, DELETED with the
        object; BOOKMARK with its resourceVersion alone), for about `seconds`; the caller
        watches again after, from the last resourceVersion it saw. From `resource_version`
        (a list's, `list_metadata_cached`): the changes after it alone. Without one the API
        server first sends every object of the collection as ADDED. Raises KubeError (410:
        the version is too old, list again)."""
        path = self.path_for(api_version, kind, namespace)
        query = {"watch": "1", "timeoutSeconds": str(seconds), "allowWatchBookmarks": "true"}
        if resource_version:
            query["resourceVersion"] = resource_version
        if label_selector:
            query["labelSelector"] = label_selector
        for line in self.transport.stream_lines(path, query, seconds):
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict) and isinstance(event.get("object"), dict):
                if event.get("type") == "ERROR":
                    raise KubeError(f"watch of {kind}: {event['object'].get('message')}",
                                    status=int(event["object"].get("code") or 0))
                yield str(event.get("type")), event["object"]

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Manifest | None:
        path = self._served_path(api_version, kind, namespace, name)
        if path is None:
            return None
        status, body = self.request("GET", path)
        if status == 404:
            return None
        ref = ObjectRef(api_version.rpartition("/")[0], kind, namespace, name)
        if status >= 300:
            raise object_error(ref, "read", status, body)
        if not isinstance(body, dict):  # never taken for "not there"
            raise KubeError(f"read {ref}: the API server answered {status} without an object",
                            status=status, reason=Reason.READ_FAILED)
        return body

    def list_objects(self, api_version: str, kind: str, namespace: str = "",
                     label_selector: str = "") -> list[Manifest]:
        """The objects of a kind in `namespace` (a namespaced kind without one: in every
        namespace, one request)."""
        return self._list(api_version, kind, namespace, label_selector, "application/json")

    def list_metadata(self, api_version: str, kind: str, namespace: str = "",
                      label_selector: str = "") -> list[Manifest]:
        """The objects' metadata alone (the API server's PartialObjectMetadataList, as
        client-go's metadata client asks for it): names, uids, resourceVersions and labels
        for a fraction of the bytes. A server that does not offer it answers the full list,
        which is returned as it is (each item then holds more than its metadata)."""
        return self._list(api_version, kind, namespace, label_selector, METADATA_ACCEPT)

    def list_pages(self, api_version: str, kind: str, namespace: str = "",
                   label_selector: str = "") -> Iterator[list[Manifest]]:
        """The objects in pages of at most PAGE, each read when the one before was used.
        Raises ContinueExpired when the server forgot where a list was (etcd compacted it
        while the pages were read): the caller lists again."""
        return self._pages(api_version, kind, namespace, label_selector, "application/json")

    def _list(self, api_version: str, kind: str, namespace: str, label_selector: str,
              accept: str) -> list[Manifest]:
        try:
            return [item for page in self._pages(api_version, kind, namespace, label_selector,
                                                 accept) for item in page]
        except ContinueExpired:  # as client-go's pager does: the whole list, in one answer
            return self._page(api_version, kind, namespace,
                              {"labelSelector": label_selector} if label_selector else {},
                              accept).items

    def _pages(self, api_version: str, kind: str, namespace: str, label_selector: str,
               accept: str) -> Iterator[list[Manifest]]:
        """Pages of PAGE objects (METADATA_PAGE of metadata), as client-go's pager and kubectl
        ask: a list of 5,000 records is never one answer, so neither its bytes nor the
        decoder's working memory for them (several times the answer's size) are held at
        once."""
        query = {"labelSelector": label_selector} if label_selector else {}
        limit = METADATA_PAGE if accept == METADATA_ACCEPT else PAGE
        token = ""
        while True:
            asked = {**query, "limit": str(limit), **({"continue": token} if token else {})}
            items, token, _ = self._page(api_version, kind, namespace, asked, accept)
            yield items
            if not token:
                return

    def list_metadata_cached(self, api_version: str, kind: str, namespace: str = "",
                             label_selector: str = "") -> tuple[list[Manifest], str]:
        """The objects' metadata as the API server's watch cache holds them
        (`resourceVersion=0`: not a read of etcd, which at 5,000 records took 3.5 s on the
        harness against 0.5 s from the cache), and the list's resourceVersion: what a watch
        that follows it begins from (as client-go's reflector lists and watches). Not for
        what must be current (a pass's records): the cache may lag behind etcd."""
        return self._metadata_from(api_version, kind, namespace, label_selector,
                                   {"resourceVersion": "0"})

    def list_metadata_since(self, api_version: str, kind: str, namespace: str,
                            label_selector: str, version: str) -> list[Manifest]:
        """`list_metadata`, at least as new as `version` (`resourceVersionMatch=NotOlderThan`):
        the API server answers from its watch cache once the cache holds that version, not
        with a read of etcd. Raises KubeError when it cannot (its cache does not reach the
        version in time: 504 "Too large resource version")."""
        return self._metadata_from(api_version, kind, namespace, label_selector, {
            "resourceVersion": version, "resourceVersionMatch": "NotOlderThan"})[0]

    def _metadata_from(self, api_version: str, kind: str, namespace: str, label_selector: str,
                       version: dict[str, str]) -> tuple[list[Manifest], str]:
        """A list of metadata whose first page asks for `version` (the next pages name the
        first one's snapshot alone, as the API server requires); its items and version."""
        query = {"labelSelector": label_selector} if label_selector else {}
        first = self._page(api_version, kind, namespace,
                           {**query, **version, "limit": str(METADATA_PAGE)}, METADATA_ACCEPT)
        items, token = list(first.items), first.token
        while token:
            page = self._page(api_version, kind, namespace,
                              {**query, "limit": str(METADATA_PAGE), "continue": token},
                              METADATA_ACCEPT)
            items += page.items
            token = page.token
        return items, first.version

    def _page(self, api_version: str, kind: str, namespace: str, query: dict[str, str],
              accept: str) -> Page:
        """One answer to a list: its items, the token of the next page ("" none) and the
        list's resourceVersion."""
        status, body = self.request("GET", self.path_for(api_version, kind, namespace),
                                    query=query, accept=accept)
        if status == 404:
            return Page([], "", "")
        if status == 410 and "continue" in query:
            raise ContinueExpired(f"cannot list {kind}: {message_of(body)}", status=status,
                                  reason=Reason.LIST_FAILED)
        if status >= 300:
            raise KubeError(f"cannot list {kind}: {message_of(body)}", status=status,
                            reason=Reason.LIST_FAILED)
        items = body.get("items") if isinstance(body, dict) else None
        if items is None and isinstance(body, dict) and "items" in body:
            items = []  # an empty PartialObjectMetadataList says `"items": null`
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise KubeError(f"cannot list {kind}: the API server answered {status} without a "
                            "list of objects", status=status, reason=Reason.LIST_FAILED)
        for item in items:
            if item.get("kind") == "PartialObjectMetadata":
                item["apiVersion"], item["kind"] = api_version, kind
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        meta = body.get("metadata") if isinstance(body, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        return Page(items, str(meta.get("continue") or ""), str(meta.get("resourceVersion") or ""))

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
            raise object_error(ObjectRef(api_version.rpartition("/")[0], kind, namespace, name),
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
