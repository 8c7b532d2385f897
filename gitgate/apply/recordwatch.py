"""The records as the requests watcher last saw them: which Bundles exist, at which
resourceVersion, and how far the watch has reached (every change up to that version was sent
to it, as events or bookmarks).

A pass needs the metadata of every record at least as new as the newest record this process
listed or wrote. The API server's watch cache answers such a list from the same watch this
view follows; so once the watch has reached that version, the view is that list, and the pass
sends no request for it (at 5,000 records a list from the cache still cost 0.23 s a page on
the harness). The view is only given while the watch runs: not before its first list, and
not after a failure until it lists again. Pure: the watcher feeds it, the pass asks it.
"""

from __future__ import annotations

import threading

from gitgate.model import Manifest

CHANGED = frozenset({"ADDED", "MODIFIED"})


def _identity(obj: Manifest) -> tuple[str, str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return "", "", ""
    return (str(meta.get("name") or ""), str(meta.get("uid") or ""),
            str(meta.get("resourceVersion") or ""))


class WatchedRecords:
    """name -> (uid, resourceVersion) of each record the watch knows, and the version it
    reached. Versions are compared as the integers etcd gives; one of another shape turns the
    view off until the next list."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, tuple[str, str]] | None = None  # None: not watching
        self._reached = 0

    def listed(self, items: list[Manifest], version: str) -> None:
        """The list a watch begins from, and that list's resourceVersion."""
        records = {}
        for item in items:
            name, uid, at = _identity(item)
            if name:
                records[name] = (uid, at)
        with self._lock:
            if not version.isdigit():
                self._records = None
                return
            self._records, self._reached = records, int(version)

    def sent(self, kind: str, obj: Manifest) -> None:
        """An event of the watch: ADDED, MODIFIED, DELETED (the object) or BOOKMARK (its
        resourceVersion alone)."""
        name, uid, at = _identity(obj)
        with self._lock:
            if self._records is None:
                return
            if not at.isdigit():
                self._records = None
                return
            if kind in CHANGED and name:
                self._records[name] = (uid, at)
            elif kind == "DELETED":
                self._records.pop(name, None)
            self._reached = max(self._reached, int(at))

    def lost(self) -> None:
        """The watch failed or stopped: nothing is given until it lists again."""
        with self._lock:
            self._records = None

    def at_least(self, version: str) -> list[Manifest] | None:
        """Every record's metadata (name, uid, resourceVersion), sorted by name as the API
        server lists them, when the watch runs and has reached `version`; else None (the pass
        lists them)."""
        with self._lock:
            if self._records is None or not version.isdigit() or self._reached < int(version):
                return None
            return [{"metadata": {"name": name, "uid": uid, "resourceVersion": at}}
                    for name, (uid, at) in sorted(self._records.items())]
