"""The ports through which gitgate talks to an API server: one set of Protocols, each the
smallest a step needs. `apiserver.verbs.KubeCluster` (a real API server), the test emulator's
client and the tests' in-memory cluster all satisfy `ClusterPort`, and so every smaller one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from gitgate.apiserver.changeset import Applied
from gitgate.model import FIELD_MANAGER, Manifest


class Reader(Protocol):
    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Manifest | None: ...


class Lister(Protocol):
    def list_objects(self, api_version: str, kind: str, namespace: str = "",
                     label_selector: str = "") -> list[Manifest]: ...


def list_metadata(cluster: Lister, api_version: str, kind: str, namespace: str = "",
                  label_selector: str = "") -> list[Manifest]:
    """The metadata of a collection's objects where the cluster can list it alone (a real
    API server), else the objects in full: callers read `metadata` of either."""
    method = getattr(cluster, "list_metadata", None)
    if callable(method):
        found: list[Manifest] = method(api_version, kind, namespace, label_selector)
        return found
    return cluster.list_objects(api_version, kind, namespace, label_selector)


def list_metadata_since(cluster: Lister, api_version: str, kind: str, namespace: str,
                        label_selector: str, version: str) -> list[Manifest] | None:
    """`list_metadata` at least as new as `version`, from the API server's cache; None where
    the cluster cannot answer one (the caller lists consistently). Raises KubeError."""
    method = getattr(cluster, "list_metadata_since", None)
    if not callable(method):
        return None
    found: list[Manifest] = method(api_version, kind, namespace, label_selector, version)
    return found


def list_pages(cluster: Lister, api_version: str, kind: str, namespace: str = "",
               label_selector: str = "") -> Iterator[list[Manifest]]:
    """A collection's objects in pages where the cluster pages its lists (a real API
    server: raises ContinueExpired when the list must begin again), else in one."""
    method = getattr(cluster, "list_pages", None)
    if callable(method):
        pages: Iterator[list[Manifest]] = method(api_version, kind, namespace, label_selector)
        return pages
    return iter([cluster.list_objects(api_version, kind, namespace, label_selector)])


class Writer(Protocol):
    def apply(self, obj: Manifest, *, dry_run: bool = False, force: bool = False,
              manager: str = FIELD_MANAGER, subresource: str = "") -> Applied: ...


def create(cluster: Writer, obj: Manifest) -> None:
    """`obj` created, as a POST where the cluster can (a real API server: kube-apiserver spends
    about a third less on it than on the server-side apply of a new object), else applied.
    For an object gitgate writes once and never changes (an event): one that exists already
    counts as created. Raises KubeError."""
    method = getattr(cluster, "create", None)
    if callable(method):
        method(obj)
        return
    cluster.apply(obj)


class PolicyPort(Reader, Writer, Protocol):
    """Reads and writes a policy (suspend-first)."""


class ObjectPort(Reader, Writer, Protocol):
    """Reads, writes and deletes one object (recreate)."""

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool: ...


class ClusterPort(ObjectPort, Lister, Protocol):
    """Everything a pass asks of the API server."""

    def wait_established(self, crd_names: list[str], timeout: float = 60.0) -> list[str]: ...
    def scope_of(self, api_version: str, kind: str) -> bool | None: ...


class Delegating:
    """A ClusterPort over another (`own`) that passes lists and discovery through; a wrapper
    (tenants' identities, the shard fence) overrides only what it changes."""

    def __init__(self, own: ClusterPort):
        self.own = own

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Manifest | None:
        return self.own.get(api_version, kind, namespace, name)

    def list_objects(self, api_version: str, kind: str, namespace: str = "",
                     label_selector: str = "") -> list[Manifest]:
        return self.own.list_objects(api_version, kind, namespace, label_selector)

    def list_metadata(self, api_version: str, kind: str, namespace: str = "",
                      label_selector: str = "") -> list[Manifest]:
        return list_metadata(self.own, api_version, kind, namespace, label_selector)

    def list_metadata_since(self, api_version: str, kind: str, namespace: str,
                            label_selector: str, version: str) -> list[Manifest] | None:
        return list_metadata_since(self.own, api_version, kind, namespace, label_selector,
                                   version)

    def list_pages(self, api_version: str, kind: str, namespace: str = "",
                   label_selector: str = "") -> Iterator[list[Manifest]]:
        return list_pages(self.own, api_version, kind, namespace, label_selector)

    def wait_established(self, crd_names: list[str], timeout: float = 60.0) -> list[str]:
        return self.own.wait_established(crd_names, timeout)

    def scope_of(self, api_version: str, kind: str) -> bool | None:
        return self.own.scope_of(api_version, kind)
