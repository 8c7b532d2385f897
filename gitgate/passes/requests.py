"""`gitgate reconcile` through the API server, as `flux reconcile` works: the CLI stamps an
annotation on the Bundles it asks about; a running loop watches its Bundles, runs a pass at
once, and acknowledges each stamp in the Bundle's status (`lastHandledReconcileAt`) when the
pass is done. No port-forward, no webhook secret: RBAC on the Bundles decides who may ask."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply.inventory import NAMESPACE
from gitgate.apply.recordformat import API_VERSION, KIND, bundle_name
from gitgate.errors import GitgateError
from gitgate.model import Manifest
from gitgate.model.ownership import INSTANCE_LABEL

REQUESTED = "gitgate.io/reconcile-requested-at"
HANDLED = "lastHandledReconcileAt"
ASKER = "gitgate-reconcile"  # the CLI's field manager
ACKNOWLEDGER = "gitgate-acknowledge"  # the loop's, for the status field alone
log = logging.getLogger("gitgate")


class Watching(Protocol):
    def watch(self, api_version: str, kind: str, namespace: str = "",
              label_selector: str = "", seconds: int = 60,
              resource_version: str = "") -> Iterator[tuple[str, Manifest]]: ...

    def list_metadata_cached(self, api_version: str, kind: str, namespace: str = "",
                             label_selector: str = "") -> tuple[list[Manifest], str]: ...


def _version(obj: Manifest) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _asked(obj: Manifest) -> tuple[str, str]:
    """The Bundle's name and the request stamped on it that it has not handled ("" none)."""
    meta = obj.get("metadata") or {}
    token = str((meta.get("annotations") or {}).get(REQUESTED) or "")
    handled = str((obj.get("status") or {}).get(HANDLED) or "")
    return str(meta.get("name") or ""), token if token and token != handled else ""


class RecordFeed(Protocol):
    """Where what the watch sends goes besides the requests (the records' cache)."""

    def listed(self, items: list[Manifest], version: str) -> None: ...

    def sent(self, kind: str, obj: Manifest) -> None: ...

    def lost(self) -> None: ...


class Unfed:
    """No records' cache to feed."""

    def listed(self, items: list[Manifest], version: str) -> None:
        return None

    def sent(self, kind: str, obj: Manifest) -> None:
        return None

    def lost(self) -> None:
        return None


class ReconcileRequests:
    """The requests a running loop has seen and not acknowledged yet."""

    def __init__(self, cluster: ClusterPort, watcher: Watching, instance: str,
                 on_request: Callable[[], object], feed: RecordFeed | None = None):
        self.cluster, self.watcher, self.instance = cluster, watcher, instance
        self.on_request = on_request
        self.feed = feed or Unfed()  # the list, each event, and a watch lost
        self.lists = 0  # lists the watch began from (a watch that ends is resumed, not listed)
        self._pending: dict[str, str] = {}
        self._lock = threading.Lock()

    def _seen(self, obj: Manifest) -> None:
        name, token = _asked(obj)
        if not token:
            return
        with self._lock:
            if self._pending.get(name) == token:
                return
            self._pending[name] = token
        log.info("reconcile requested through %s %s", KIND, name,
                 extra={"event": "reconcile-requested", "bundle": name, "at": token})
        self.on_request()

    def _seen_listed(self, obj: Manifest) -> None:
        """A listed Bundle: its metadata (the stamp) alone, so one stamped is read whole
        (whether it was handled is in its status). 5,000 records are not listed whole."""
        if "status" not in obj and _asked({"metadata": obj.get("metadata")})[1]:
            meta = obj.get("metadata") or {}
            found = self.cluster.get(API_VERSION, KIND, NAMESPACE, str(meta.get("name") or ""))
            if found is None:
                return
            obj = found
        self._seen(obj)

    def watch_forever(self, stop: threading.Event, seconds: int = 60) -> None:
        """As client-go's reflector: list once (what was asked while no watch ran; from the
        API server's cache), then watch from the list's resourceVersion, and when a watch
        ends, watch again from the last version it sent (bookmarks included). Listed again
        only when a watch fails (410: its version is too old; after 2 s otherwise). A watch
        begun without a version would first send every Bundle whole: 5,000 records each
        time it is opened."""
        try:
            self._watch(stop, seconds)
        finally:  # stopped, or failed in a way not foreseen: the feed is told it is not fed
            self.feed.lost()

    def _watch(self, stop: threading.Event, seconds: int) -> None:
        selector = f"{INSTANCE_LABEL}={self.instance}"
        version = ""
        while not stop.is_set():
            try:
                if not version:
                    listed, version = self.watcher.list_metadata_cached(
                        API_VERSION, KIND, NAMESPACE, selector)
                    self.lists += 1
                    self.feed.listed(listed, version)
                    for obj in listed:
                        self._seen_listed(obj)
                for kind, obj in self.watcher.watch(API_VERSION, KIND, NAMESPACE, selector,
                                                    seconds, resource_version=version):
                    if stop.is_set():
                        return
                    version = _version(obj) or version
                    self.feed.sent(kind, obj)
                    if kind in ("ADDED", "MODIFIED"):
                        self._seen(obj)
            except GitgateError as exc:
                log.debug("watching Bundles: %s", exc.message)
                self.feed.lost()
                version = ""
                if getattr(exc, "status", 0) != 410:
                    stop.wait(2.0)

    def take(self) -> dict[str, str]:
        """The requests a pass starting now answers."""
        with self._lock:
            return dict(self._pending)

    def acknowledge(self, taken: dict[str, str]) -> None:
        """Say in each Bundle's status that its request was handled (a failed write is
        tried again after the next pass)."""
        for name, token in taken.items():
            try:
                self.cluster.apply({"apiVersion": API_VERSION, "kind": KIND, "metadata": {
                    "name": name, "namespace": NAMESPACE}, "status": {HANDLED: token}},
                    manager=ACKNOWLEDGER, subresource="status")
            except GitgateError as exc:
                log.warning("cannot acknowledge the reconcile request of %s: %s", name,
                            exc.message, extra={"event": "reconcile-unacknowledged"})
                continue
            with self._lock:
                if self._pending.get(name) == token:
                    del self._pending[name]


def request_reconcile(cluster: ClusterPort, instance: str, bundles: list[str],
                      token: str) -> list[str]:
    """Stamp `token` on the Bundles of `bundles` (the CLI). Returns their Bundles' names."""
    names = [bundle_name(b, instance) for b in bundles]
    for name in names:
        cluster.apply({"apiVersion": API_VERSION, "kind": KIND, "metadata": {
            "name": name, "namespace": NAMESPACE, "annotations": {REQUESTED: token}}},
            manager=ASKER)
    return names


def handled(cluster: ClusterPort, name: str, token: str) -> dict[str, Any] | None:
    """The Bundle once a loop acknowledged `token` on it; None before."""
    found = cluster.get(API_VERSION, KIND, NAMESPACE, name)
    if found is None or (found.get("status") or {}).get(HANDLED) != token:
        return None
    return found
