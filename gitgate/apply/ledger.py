"""gitgate's own state on the API server: every bundle's record (a `Bundle` object) read with
one list, and a `Ledger` that writes and deletes them and knows, after the pass, what they
are (the loop shows status from it without reading them again). Records kept by an earlier
release (ConfigMaps) are read when no Bundle is, and moved over by `migrate`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from gitgate.apply.bundlerecord import (
    API_VERSION,
    CRD_NAME,
    KIND,
    bundle_crd,
    bundle_name,
    bundle_spec,
    crd_current,
    event_for,
    from_bundle,
    holds_intent,
    to_bundle,
    to_bundle_status,
    to_new_bundle,
    without_undeclared,
)
from gitgate.apply.changeset import Applied
from gitgate.apply.inventory import DEFAULT_INSTANCE, NAMESPACE, Inventory, system_namespace
from gitgate.apply.legacyinventory import configmap_name, from_configmap
from gitgate.apply.ports import (
    ClusterPort,
    Lister,
    Reader,
    create,
    list_metadata,
    list_metadata_since,
    list_pages,
)
from gitgate.apply.transitions import Transition
from gitgate.apply.watchedrecords import WatchedRecords
from gitgate.errors import ContinueExpired, GitgateError, KubeError
from gitgate.model import Manifest
from gitgate.model.ownership import INSTANCE_LABEL, INVENTORY_LABEL, Origin

log = logging.getLogger("gitgate")


ONE_BY_ONE = 32  # at most this many changed records are read one by one (else: one list)


def _is_full(item: Manifest) -> bool:
    return "spec" in item or "status" in item


class _Parsed:
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
        self.consistent_due = True  # the next list reads etcd (`read_records_consistently`)
        self.watched = WatchedRecords()  # the records as the requests watcher sees them
        # off in a one-shot command, which reads the records once (`keep_records_parsed`)
        self.enabled = False

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
        if not (self.enabled and all(key) and _is_full(answer)):
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
        if not self.enabled:
            return
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


_PARSED = _Parsed()


def remember_record(answer: Manifest) -> None:
    """A Bundle as the API server answered a write of it or a watch sent it
    (`_Parsed.remember`)."""
    _PARSED.remember(answer)


class WatchFeed:
    """What `gitgate run`'s watch of its Bundles sends, into the records' cache: each Bundle
    it sends is kept parsed, and the names and versions it knows answer a pass's list of the
    records once the watch has reached the version that list must be at least as new as
    (`WatchedRecords`)."""

    def listed(self, items: list[Manifest], version: str) -> None:
        if _PARSED.enabled:
            _PARSED.watched.listed(items, version)

    def sent(self, kind: str, obj: Manifest) -> None:
        if kind in ("ADDED", "MODIFIED"):
            remember_record(obj)
        if _PARSED.enabled:
            _PARSED.watched.sent(kind, obj)

    def lost(self) -> None:
        _PARSED.watched.lost()


def remember_written(answer: Manifest) -> None:
    """A Bundle as the API server answered this process's write of it: kept, and the next
    list of the records is at least as new as it (never older than this process's own
    writes, wherever that list is answered from)."""
    _PARSED.remember(answer)
    _PARSED.note_version(str((answer.get("metadata") or {}).get("resourceVersion") or ""))


def read_records_consistently() -> None:
    """The next list of the records reads etcd, not the API server's cache: the loop asks it
    when its share moved (the records a former holder wrote last must be seen as written)."""
    _PARSED.consistent_due = True


class RecordPort(Reader, Lister, Protocol):
    """What reading the records needs: a list (of metadata where the server offers it) and
    a read of one record."""


def keep_records_parsed() -> None:
    """From now on, this process keeps the records it read, parsed, and reads again only
    those that changed (`gitgate run`: a pass every interval, for as long as it runs)."""
    _PARSED.enabled = True


def _bundles(cluster: RecordPort, instance: str) -> list[Inventory] | None:
    """The Bundles of `instance`; None when the API server does not serve them yet."""
    selector = f"{INSTANCE_LABEL}={instance}"
    try:
        try:
            return _parsed_bundles(cluster, selector, lambda: list_pages(
                cluster, API_VERSION, KIND, NAMESPACE, selector))
        except ContinueExpired:  # the pages expired half-way (a 410): a list from the start
            return _parsed_bundles(cluster, selector, lambda: [
                cluster.list_objects(API_VERSION, KIND, NAMESPACE, selector)])
    except KubeError as exc:
        if exc.status == 404:
            return None
        raise


def _parsed_bundles(cluster: RecordPort, selector: str,
                    pages: Callable[[], Iterable[list[Manifest]]]) -> list[Inventory]:
    if not _PARSED.enabled:  # read once, parsed page by page
        return [from_bundle(record) for page in pages() for record in page]
    since = _PARSED.since()
    listed = _PARSED.watched.at_least(since) if since else None
    if listed is None:
        listed = _cached_metadata(cluster, selector, since)
    if listed is None:  # a consistent read (of etcd): the versions it names start afresh
        _PARSED.reading_consistently()
        try:
            listed = list_metadata(cluster, API_VERSION, KIND, NAMESPACE, selector)
        except BaseException:
            _PARSED.consistent_due = True
            raise
    for item in listed:
        _PARSED.note_version(str((item.get("metadata") or {}).get("resourceVersion") or ""))
    return _PARSED.of(listed, lambda name: _read_bundle(cluster, name), pages)


def _cached_metadata(cluster: RecordPort, selector: str, since: str) -> list[Manifest] | None:
    """The records' metadata from the API server's watch cache, at least as new as `since`
    (the newest record this process listed or wrote): at 5,000 records 0.5 s against 3.5 s
    for a read of etcd on the harness. None when `since` is "" or the server cannot answer
    (then a consistent list follows)."""
    if not since:
        return None
    try:
        return list_metadata_since(cluster, API_VERSION, KIND, NAMESPACE, selector, since)
    except KubeError as exc:
        log.debug("the records from the API server's cache: %s; read from etcd", exc.message)
        return None


def _read_bundle(cluster: RecordPort, name: str) -> Manifest | None:
    return cluster.get(API_VERSION, KIND, NAMESPACE, name)


def read_legacy(cluster: Lister, instance: str = DEFAULT_INSTANCE) -> dict[str, Inventory]:
    """The records an earlier release kept in ConfigMaps."""
    found = cluster.list_objects("v1", "ConfigMap", NAMESPACE,
                                 f"{INVENTORY_LABEL}=true,{INSTANCE_LABEL}={instance}")
    return {inv.bundle: inv for inv in (from_configmap(c) for c in found)}


def read_inventories(cluster: RecordPort, instance: str = DEFAULT_INSTANCE) -> dict[str, Inventory]:
    """Every bundle's record: its Bundle. Where there is none (the CRD is not there yet, or
    nothing was migrated), the ConfigMaps an earlier release wrote."""
    bundles = _bundles(cluster, instance)
    if bundles:
        return {inv.bundle: inv for inv in bundles}
    return read_legacy(cluster, instance)


def recorded_instances(cluster: Lister) -> list[str]:
    """The gitgate instances that recorded bundles on this API server (by their label)."""
    found = []
    try:
        found = cluster.list_objects(API_VERSION, KIND, NAMESPACE)
    except KubeError as exc:
        if exc.status != 404:
            raise
    found += cluster.list_objects("v1", "ConfigMap", NAMESPACE, f"{INVENTORY_LABEL}=true")
    return sorted({(c["metadata"].get("labels") or {}).get(INSTANCE_LABEL, DEFAULT_INSTANCE)
                   for c in found})


@dataclass(frozen=True)
class Stored:
    """What the API server holds of a Bundle: its spec and generation, its conditions."""

    spec: dict[str, object]
    generation: int
    conditions: tuple[dict[str, object], ...] = ()
    uid: str = ""
    claimed: bool = True  # it has the label that keeps Karmada's detector off it


def stored_of(inventories: Mapping[str, Inventory]) -> dict[str, Stored]:
    """What is known of the Bundles behind `inventories` (legacy records have none)."""
    return {name: Stored(bundle_spec(inv), inv.generation, inv.conditions, inv.uid,
                         inv.claimed)
            for name, inv in inventories.items() if inv.generation}


@dataclass
class Ledger:
    """Writes and deletes records; with `keep`, also the records as this pass leaves them
    (what it read, then each write and delete), for a caller that shows status from them
    instead of reading them again (the loop). Without it nothing is kept: a CLI pass holds no
    second copy of every record. `stored`: what the API server holds of each Bundle, so the
    object itself is written only when its spec changes; `now`: the pass's time, for the
    conditions that change."""

    known: dict[str, Inventory]
    keep: bool = False
    certain: bool = True
    stored: dict[str, Stored] = field(default_factory=dict)
    now: str = ""
    emitted: list[tuple[str, Transition]] = field(default_factory=list)  # (bundle, event)
    homed: bool = False  # gitgate's namespace and the Bundle type were made sure of
    # the repo the pass applies: every record written names it (unknown: each keeps its own)
    origin: Origin = field(default_factory=Origin)

    def _stamped(self, inventory: Inventory) -> Inventory:
        if not self.origin.known or inventory.origin == self.origin:
            return inventory
        return replace(inventory, origin=self.origin)

    def ensure_home(self, cluster: ClusterPort) -> None:
        """gitgate's namespace and the Bundle type, once per pass (before its first write)."""
        if not self.homed:
            ensure_system_namespace(cluster)
            self.homed = True

    def write(self, cluster: ClusterPort, inventory: Inventory,
              events: Sequence[Transition] = ()) -> None:
        """The record, then an event per transition (an event that cannot be written is
        said in the log and changes nothing else)."""
        inventory = self._stamped(inventory)
        try:
            self._write(cluster, inventory)
        except BaseException:
            self.certain = False
            raise
        for order, transition in enumerate(events):
            self.emitted.append((inventory.bundle, transition))
            try:
                create(cluster, event_for(inventory, self.stored[inventory.bundle].uid,
                                          transition, self.now, order))
            except GitgateError as exc:
                log.warning("cannot record the event %s of %s: %s", transition.reason,
                            inventory.bundle, exc.message, extra={"event": "event-unrecorded"})
        self._known(inventory)

    def write_ahead(self, cluster: ClusterPort, inventory: Inventory) -> None:
        """A bundle's write-ahead record: for a bundle with no Bundle yet, one request that
        creates it holding the intent (`to_new_bundle`), not a creation and a status write;
        else, or where the installed CRD is an earlier one (which refuses the intent, or
        prunes it), the record as `write` writes it."""
        name = inventory.bundle
        inventory = self._stamped(inventory)
        if name in self.stored:
            self.write(cluster, inventory)
            return
        try:
            answer = cluster.apply(to_new_bundle(inventory)).obj
        except KubeError as exc:
            # an earlier CRD: server-side apply refuses a field its schema does not declare
            # (`.spec.intent: field not declared in schema`); any other refusal is met again
            log.debug("the write-ahead record of %s as its creation: %s; as a status",
                      name, exc.message)
            self.write(cluster, inventory)
            return
        except BaseException:
            self.certain = False
            raise
        meta = answer.get("metadata") or {}
        # the spec as `write` compares it: the intent is left to the next spec write to drop
        self.stored[name] = Stored(bundle_spec(inventory), int(meta.get("generation") or 1),
                                   (), str(meta.get("uid") or ""))
        if not holds_intent(answer, inventory):
            self.write(cluster, inventory)  # the status only: the spec is there
            return
        remember_written(answer)
        self._known(inventory)

    def _known(self, inventory: Inventory) -> None:
        """With `keep`: the record as this pass leaves it, for the status shown from it."""
        if not self.keep:
            return
        earlier = self.known.get(inventory.bundle)  # `resume`'s own field is not ours to drop
        self.known[inventory.bundle] = replace(inventory, progression=replace(
            inventory.progression, retry=earlier.progression.retry if earlier else ""),
            generation=self.stored[inventory.bundle].generation,
            conditions=self.stored[inventory.bundle].conditions,
            uid=self.stored[inventory.bundle].uid)

    def _write(self, cluster: ClusterPort, inventory: Inventory) -> None:
        """The Bundle when its spec changed (or it is new, or written before it carried the
        claimed-by label), then its status."""
        name = inventory.bundle
        spec = bundle_spec(inventory)
        stored = self.stored.get(name)
        if stored is None or stored.spec != spec or not stored.claimed:
            answer = _apply_record(cluster, to_bundle(inventory))
            meta = answer.obj.get("metadata") or {}
            stored = Stored(spec, int(meta.get("generation") or 1),
                            stored.conditions if stored else (), str(meta.get("uid") or ""))
        status = to_bundle_status(replace(inventory, conditions=stored.conditions),
                                  stored.generation, self.now)
        remember_written(cluster.apply(status, subresource="status").obj)
        self.stored[name] = replace(stored, conditions=tuple(status["status"]["conditions"]))

    def delete(self, cluster: ClusterPort, name: str, instance: str) -> None:
        try:
            cluster.delete(API_VERSION, KIND, NAMESPACE, bundle_name(name, instance))
        except BaseException:
            self.certain = False
            raise
        self.known.pop(name, None)
        self.stored.pop(name, None)


def _apply_record(cluster: ClusterPort, bundle: Manifest) -> Applied:
    """A Bundle's spec applied; where the installed CRD is an earlier one that does not
    declare an optional field (`bundlerecord.OPTIONAL_SPEC_FIELDS`), applied again without
    it, as that schema can hold it."""
    try:
        return cluster.apply(bundle)
    except KubeError as exc:
        older = without_undeclared(bundle, exc.message)
        if older is None:
            raise
        log.info("the record %s goes without %s: the installed Bundle type does not declare "
                 "it", bundle["metadata"]["name"],
                 ", ".join(sorted(set(bundle["spec"]) - set(older["spec"]))))
        return cluster.apply(older)


def ensure_system_namespace(cluster: ClusterPort) -> None:
    """Where gitgate keeps its records: its namespace, and the Bundle type."""
    if cluster.get("v1", "Namespace", "", NAMESPACE) is None:
        cluster.apply(system_namespace())
    ensure_bundle_crd(cluster)


def ensure_bundle_crd(cluster: ClusterPort) -> None:
    """The Bundle type, created when the API server lacks it (and gitgate may create it);
    waited for until it is served. Raises GitgateError naming what to install otherwise."""
    found = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", CRD_NAME)
    if found is not None and not crd_current(found):
        _upgrade_crd(cluster)
    if found is not None and any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in ((found.get("status") or {}).get("conditions") or [])):
        return
    if found is None:
        try:
            cluster.apply(bundle_crd())
        except KubeError as exc:
            raise GitgateError(f"the {CRD_NAME} CustomResourceDefinition is not installed and "
                               f"gitgate may not create it ({exc.message}): apply deploy/crds/ "
                               "(kubectl apply -k deploy/crds) as an admin") from None
    if cluster.wait_established([CRD_NAME]):
        raise GitgateError(f"the {CRD_NAME} CustomResourceDefinition was created but is not "
                           "served yet: the next pass tries again")


def _upgrade_crd(cluster: ClusterPort) -> None:
    """An installed Bundle CRD of an earlier gitgate, brought to this one's schema where
    gitgate may write it; else said, and the records go on with the older schema: its
    server-side apply refuses the fields it lacks, such as `spec.digest`, and
    `_apply_record` writes the record again without them."""
    try:
        cluster.apply(bundle_crd())
    except KubeError as exc:
        log.warning("the installed %s CustomResourceDefinition is an earlier one and gitgate "
                    "may not update it (%s): apply deploy/crds/ as an admin", CRD_NAME,
                    exc.message, extra={"event": "crd-outdated"})


def migrate(cluster: ClusterPort, instance: str, now: str) -> int:
    """Move the records an earlier release kept in ConfigMaps into Bundles: every Bundle is
    written first, then the ConfigMaps deleted, so a crash in between loses nothing (a
    Bundle wins over a ConfigMap left behind, which the next run deletes). Returns how many
    were moved."""
    legacy = read_legacy(cluster, instance)
    if not legacy:
        return 0
    ensure_bundle_crd(cluster)
    bundles = {inv.bundle: inv for inv in _bundles(cluster, instance) or []}
    ledger = Ledger({}, stored=stored_of(bundles), now=now)
    for name, inventory in sorted(legacy.items()):
        if name not in bundles:
            ledger.write(cluster, inventory)
    for name, inventory in sorted(legacy.items()):
        cluster.delete("v1", "ConfigMap", NAMESPACE, configmap_name(name, inventory.instance))
    return len(legacy)
