"""Per-bundle inventory: what gitgate last applied (object refs with content hashes) and what it
knows of the bundle, kept in a `Bundle` object in `gitgate-system` (`apply.recordformat`
encodes it). Pure data and diffing."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gitgate.apply.conditions import BundleCondition
from gitgate.apply.recordedreason import RecordedReason
from gitgate.bundle.reach import recorded_facts
from gitgate.model import Hashed, Manifest, ObjectRef
from gitgate.model.claims import Holders
from gitgate.model.labels import stored_name
from gitgate.model.ownership import DEFAULT_INSTANCE, Origin
from gitgate.model.ownership import SYSTEM_NAMESPACE as NAMESPACE
from gitgate.model.shared import shared

__all__ = ["DEFAULT_INSTANCE", "NAMESPACE", "PRUNE_ANNOTATION", "Diff", "Entry", "Inventory",
           "contested", "diff", "entry_for", "holders_of", "mass_prune", "system_namespace"]
from gitgate.progression.record import Progression

SKIP_PROPAGATION = "namespace.karmada.io/skip-auto-propagation"
PRUNE_ANNOTATION = "gitgate.io/prune"


@dataclass(frozen=True, slots=True)  # 50,000 of them at 5,000 bundles
class Entry:
    """One object a bundle has live. `labels` and `uses` say what a freeze needs to judge
    what reaches the object once its bundle no longer renders it (`progression.livefreeze`):
    the labels it was written with (without gitgate's own bundle and instance labels, which
    the record implies: `bundle.reach`), for a workload the ConfigMaps, Secrets,
    PersistentVolumeClaims and ServiceAccounts it uses (`Kind/name`, its own namespace), and
    for an override (or another acting object) the other bundles it acted on as written.
    None: unknown (a record of an earlier release, a write-ahead intent, a write not
    confirmed)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    hash: str
    labels: tuple[tuple[str, str], ...] | None = None
    uses: tuple[str, ...] | None = None
    acts: tuple[str, ...] | None = None  # an acting object: the other bundles it acted on

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(shared(self.api_version.rpartition("/")[0]), self.kind, self.namespace,
                         self.name)

    def as_dict(self, facts: bool = True) -> dict[str, Any]:
        """The entry as a record holds it (`facts`: with its labels and uses, where known)."""
        out: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind,
                               "namespace": self.namespace, "name": self.name,
                               "hash": self.hash}
        if not facts:
            return out
        if self.labels is not None:
            out["labels"] = dict(self.labels)
        if self.uses is not None:
            out["uses"] = list(self.uses)
        if self.acts is not None:
            out["acts"] = list(self.acts)
        return out


@dataclass(frozen=True)
class Inventory:
    bundle: str
    entries: tuple[Entry, ...] = ()
    revision: str = ""
    digest: str = ""
    verdict: str = ""
    reasons: tuple[RecordedReason, ...] = ()
    message: str = ""
    since: str = ""
    last_applied: str = ""
    last_full_apply: str = ""
    instance: str = DEFAULT_INSTANCE
    source: str = ""  # the repo folder the bundle comes from
    origin: Origin = field(default_factory=Origin)  # the repo and gitgate folder it came from
    labels: tuple[tuple[str, str], ...] = ()  # the bundle's labels, for gates once it left Git
    progression: Progression = field(default_factory=Progression)  # rollout and sync state
    # member clusters that were suspended when an override acting on the bundle changed:
    # they run the old overrides until their suspension lifts ("*": every cluster)
    overrides_behind: tuple[str, ...] = ()
    # `revision` is the last revision a pass attempted; these say what is live (as Flux's
    # lastAppliedRevision): the revision and content digest last written to Karmada, and the
    # member clusters that were suspended when it changed, with the revision each still runs
    applied_revision: str = ""
    applied_digest: str = ""
    clusters_behind: tuple[tuple[str, str], ...] = ()
    # as its Bundle object has them: the generation, the conditions (their transition times
    # are kept), and the last applies (revision, digest, at, outcome, by)
    generation: int = 0
    uid: str = ""  # the Bundle's, for the events about it
    claimed: bool = True  # the Bundle has Karmada's claimed-by label (`recordformat`)
    healthy_revision: str = ""  # the last revision a loop saw ready on every cluster
    conditions: tuple[BundleCondition, ...] = ()
    history: tuple[dict[str, str], ...] = ()

    def cluster_revision(self, cluster: str) -> str:
        """The revision `cluster` runs, as far as gitgate's writes decide it ("" for none)."""
        behind = dict(self.clusters_behind)
        return behind.get(cluster, behind.get("*", self.applied_revision))

    def by_ref(self) -> dict[ObjectRef, Entry]:
        """The entries by object (worked out once: do not change the dict)."""
        return self._by_ref

    @cached_property
    def _by_ref(self) -> dict[ObjectRef, Entry]:
        return {e.ref: e for e in self.entries}

    def status_key(self) -> tuple[object, ...]:
        """What a status write would change (times excluded)."""
        return (self.entries, self.revision, self.digest, self.verdict,
                self.reasons, self.message, self.labels,
                self.progression.rollout, self.progression.hooks, self.overrides_behind,
                self.applied_revision, self.applied_digest, self.clusters_behind,
                json.dumps(self.history, sort_keys=True))


def entry_for(written: Hashed) -> Entry:
    """The inventory entry of a written object."""
    ref, manifest, digest = written
    labels, uses = recorded_facts(manifest)
    return Entry(manifest["apiVersion"], ref.kind, ref.namespace, ref.name, digest, labels,
                 uses)


def system_namespace() -> Manifest:
    """gitgate's own namespace, kept out of Karmada's automatic namespace propagation."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {SKIP_PROPAGATION: "true"}}}


@dataclass(frozen=True)
class Diff:
    to_apply: tuple[Manifest, ...]
    unchanged: tuple[ObjectRef, ...]
    to_prune: tuple[Entry, ...]
    same_as_inventory: frozenset[ObjectRef] = frozenset()  # sent only because resync is due


def diff(desired: Sequence[Hashed], previous: Inventory | None, *, resync: bool,
         keep: frozenset[ObjectRef] = frozenset(),
         contested: frozenset[ObjectRef] = frozenset()) -> Diff:
    """What to send (changed, new, or everything on resync), what is unchanged, and what left
    Git (to prune). Objects in `keep` (held through a dependency) are neither sent nor pruned.
    Objects in `contested` (another record lists them too) are sent even when recorded with
    this content: the bundle takes them over explicitly. On resync, `same_as_inventory` names
    what is sent only to find drift."""
    old = previous.by_ref() if previous else {}
    to_apply: list[Manifest] = []
    unchanged: list[ObjectRef] = []
    same: set[ObjectRef] = set()
    wanted = set()
    for ref, obj, digest in desired:
        wanted.add(ref)
        if ref in keep:
            continue
        entry = old.get(ref)
        recorded = entry is not None and entry.hash == digest and ref not in contested
        if resync or not recorded:
            to_apply.append(obj)
            if recorded:
                same.add(ref)
        else:
            unchanged.append(ref)
    to_prune = tuple(e for ref, e in sorted(old.items()) if ref not in wanted and ref not in keep)
    return Diff(tuple(to_apply), tuple(unchanged), to_prune, frozenset(same))


def contested(inventories: Iterable[Inventory]) -> frozenset[ObjectRef]:
    """The objects more than one record lists (a record kept while its bundle was held or
    left Git, and the bundle that took its objects over since)."""
    seen: set[tuple[str, str, str, str]] = set()
    twice: set[ObjectRef] = set()
    for inventory in inventories:
        for e in inventory.entries:
            key = (e.api_version, e.kind, e.namespace, e.name)
            if key in seen:
                twice.add(e.ref)
            seen.add(key)
    return frozenset(twice)


def mass_prune(prunes: int, managed: int) -> bool:
    """More than half of everything gitgate manages, or all of it, is going away."""
    return managed > 0 and prunes > 0 and (prunes * 2 > managed or prunes == managed)


def holders_of(inventories: Iterable[Inventory]) -> Holders:
    """What the records hold live, by repo folder (`model.claims`): a bundle name two folders
    claim, or an object two of them render, stays with the folder whose record holds it."""
    records = [i for i in inventories if i.source]

    def objects() -> dict[ObjectRef, str]:
        return {entry.ref: i.source for i in records for entry in i.entries}
    return Holders({stored_name(i.bundle): i.source for i in records}, objects)


HISTORY_LIMIT = 10  # applies kept in a record's history
PENDING_MESSAGE = "first pass in progress"  # a new record's message until its pass ends


def history_entry(revision: str, digest: str, at: str, outcome: str, by: str) -> dict[str, str]:
    """One apply in a record's history."""
    return {"revision": revision, "digest": digest, "at": at, "outcome": outcome, "by": by}
