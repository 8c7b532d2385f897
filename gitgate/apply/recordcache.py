"""The records' cache of `gitgate run`, one per loop and handed to whatever reads or writes
the records (`ApplyOptions.records`): each record kept parsed by the uid and resourceVersion
of its Bundle, so that a pass reads again only the records that changed. A one-shot command
has none and reads the records once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from gitgate.apply.inventory import Inventory
from gitgate.apply.recordformat import from_bundle
from gitgate.apply.recordwatch import WatchedRecords
from gitgate.model import Manifest

ONE_BY_ONE = 32  # at most this many changed records are read one by one (else: one list)


def _is_full(item: Manifest) -> bool:
    return "spec" in item or "status" in item


class RecordCache:
    """The inventories of the last list, by the uid and resourceVersion of their Bundles: a
    record the API server did not change since is neither read nor parsed again (a no-op
    pass at 5,000 bundles would otherwise list and decode 10 MB of records). A uid is unique
    across API servers and a resourceVersion changes with every write, so a key never names
    two contents. The list itself asks for metadata alone; the records it names that are
    not kept are read one by one, or, when many changed, with one list of the objects.

    A record this process wrote comes back in the API server's answer, at its new
    resourceVersion, and another writer's change comes through the loop's watch of the
    Bundles (`remember`, both): the next list that names a record at that version takes it
    from there, so neither a replica's own writes (a pass's records, what Karmada reports of
    its bundles) nor the other replicas' make the next pass read them again. The list (or
    the watch's names and versions standing for it, `WatchedRecords`) stays the authority:
    a version it does not name is never used."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, str, str], Inventory] = {}
        self._listed: dict[tuple[str, str], Inventory] = {}  # the same, by (uid, name)
        # since the last list, the latest version seen of each record: (uid, name) -> (rv, it)
        self._answered: dict[tuple[str, str], tuple[str, Inventory]] = {}
        # the newest resourceVersion of a record this process listed or wrote (0: unknown)
        self._newest = 0
        self.consistent_due = True  # the next list reads etcd (`read_consistently`)
        self.watched = WatchedRecords()  # the records as the requests watcher sees them

    @staticmethod
    def key(item: Manifest) -> tuple[str, str, str]:
        meta = item.get("metadata")
        if not isinstance(meta, dict):
            return ("", "", "")
        return (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""),
                str(meta.get("name") or ""))

    def remember(self, answer: Manifest) -> None:
        """A Bundle as the API server answered a write of it, or as a watch sent it."""
        uid, version, name = key = self.key(answer)
        if not (all(key) and _is_full(answer)):
            return
        with self._lock:  # a write's answer and the watch's event of it: parsed once
            held = self._answered.get((uid, name))
            if (held is not None and held[0] == version) or key in self._kept:
                return
        parsed = from_bundle(answer)  # held parsed: the answer itself is let go
        with self._lock:
            held = self._answered.get((uid, name))
            earlier = held[1] if held is not None else self._listed.get((uid, name))
            if earlier is not None and earlier.entries == parsed.entries:
                # most changes leave the objects as they were (a status, Karmada's reports):
                # the list of them is held once, not once per version
                parsed = replace(parsed, entries=earlier.entries)
            self._answered[(uid, name)] = (version, parsed)

    def note_version(self, version: str) -> None:
        """A record's resourceVersion, of a list or of this process's own write. Compared as
        the integers etcd gives (Kubernetes 1.35 made that comparison supported); a version
        of another shape turns the reads from the cache off for good."""
        if not version.isdigit():
            self._newest = -1
            return
        with self._lock:
            if self._newest >= 0:
                self._newest = max(self._newest, int(version))

    def reading_consistently(self) -> None:
        """A list of etcd begins: the next may come from the cache again, at least as new
        as the versions this one names and the writes after it (a version the cache could
        not reach is forgotten: everything before this list is in it)."""
        with self._lock:
            self.consistent_due = False
            if self._newest > 0:
                self._newest = 0

    def since(self) -> str:
        """The version the next list must be at least as new as, when the API server's cache
        may answer it; "" when it must read etcd (the first list, a share that moved, a
        cache that could not answer, versions that are not etcd's)."""
        with self._lock:
            return "" if self.consistent_due or self._newest <= 0 else str(self._newest)

    def of(self, listed: list[Manifest], read_one: Callable[[str], Manifest | None],
           read_all: Callable[[], Iterable[list[Manifest]]]) -> list[Inventory]:
        with self._lock:
            kept, answered, self._answered = self._kept, self._answered, {}
        if answered:
            kept = {**kept, **{(uid, version, name): parsed
                               for (uid, name), (version, parsed) in answered.items()}}
        unknown = [at for at, item in enumerate(listed)
                   if not _is_full(item) and kept.get(self.key(item)) is None]
        found: list[Manifest | None] = list(listed)
        pages: Iterable[Sequence[Manifest | None]] = [found]
        if len(unknown) > max(ONE_BY_ONE, len(listed) // 4):
            pages = read_all()  # many changed: a list of the objects is cheaper
        else:
            for at in unknown:  # gone since the list: None, and left out
                found[at] = read_one(self.key(listed[at])[2])
        out, now = [], {}
        for page in pages:  # each page parsed before the next is read
            for record in page:
                if record is None:
                    continue
                key = self.key(record)
                inventory = kept.get(key) if all(key) else None
                if inventory is None:
                    inventory = from_bundle(record)
                if all(key):
                    now[key] = inventory
                out.append(inventory)
        with self._lock:
            self._kept = now  # the records of the last list alone
            self._listed = {(uid, name): parsed for (uid, _, name), parsed in now.items()}
        return out

    def written(self, answer: Manifest) -> None:
        """A Bundle as the API server answered this process's write of it: kept, and the next
        list of the records is at least as new as it (never older than this process's own
        writes, wherever that list is answered from)."""
        self.remember(answer)
        self.note_version(str((answer.get("metadata") or {}).get("resourceVersion") or ""))

    def read_consistently(self) -> None:
        """The next list of the records reads etcd, not the API server's cache: the loop asks
        it when its share moved (the records a former holder wrote last must be seen as
        written)."""
        self.consistent_due = True


class WatchFeed:
    """What `gitgate run`'s watch of its Bundles sends, into the records' cache: each Bundle
    it sends is kept parsed, and the names and versions it knows answer a pass's list of the
    records once the watch has reached the version that list must be at least as new as
    (`WatchedRecords`)."""

    def __init__(self, cache: RecordCache):
        self.cache = cache

    def listed(self, items: list[Manifest], version: str) -> None:
        self.cache.watched.listed(items, version)

    def sent(self, kind: str, obj: Manifest) -> None:
        if kind in ("ADDED", "MODIFIED"):
            self.cache.remember(obj)
        self.cache.watched.sent(kind, obj)

    def lost(self) -> None:
        self.cache.watched.lost()
