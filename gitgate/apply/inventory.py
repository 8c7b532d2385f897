"""Per-bundle inventory: what gitgate last applied (object refs with content hashes), kept in a
ConfigMap `gitgate-<bundle>` in `gitgate-system`. Pure encoding and diffing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gitgate.model import Hashed, Manifest, ObjectRef
from gitgate.model.ownership import INSTANCE_LABEL, INVENTORY_LABEL
from gitgate.model.ownership import SYSTEM_NAMESPACE as NAMESPACE

__all__ = ["DEFAULT_INSTANCE", "NAMESPACE", "PRUNE_ANNOTATION", "RETRY_KEY", "Diff", "Entry",
           "Inventory", "configmap_name", "diff", "entry_for", "from_configmap", "mass_prune",
           "retry_request", "system_namespace", "to_configmap"]
from gitgate.progression.record import Progression

DEFAULT_INSTANCE = "default"
SKIP_PROPAGATION = "namespace.karmada.io/skip-auto-propagation"
PRUNE_ANNOTATION = "gitgate.io/prune"


@dataclass(frozen=True)
class Entry:
    api_version: str
    kind: str
    namespace: str
    name: str
    hash: str

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.api_version.rpartition("/")[0], self.kind, self.namespace,
                         self.name)

    def as_dict(self) -> dict[str, str]:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
                "name": self.name, "hash": self.hash}


@dataclass(frozen=True)
class Inventory:
    bundle: str
    entries: tuple[Entry, ...] = ()
    revision: str = ""
    digest: str = ""
    verdict: str = ""
    reasons: tuple[dict[str, Any], ...] = ()
    message: str = ""
    since: str = ""
    last_applied: str = ""
    last_full_apply: str = ""
    instance: str = DEFAULT_INSTANCE
    source: str = ""  # the repo folder the bundle comes from
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
                json.dumps(self.reasons, sort_keys=True), self.message, self.labels,
                self.progression.rollout, self.progression.hooks, self.overrides_behind,
                self.applied_revision, self.applied_digest, self.clusters_behind)


def entry_for(written: Hashed) -> Entry:
    """The inventory entry of a written object."""
    ref, manifest, digest = written
    return Entry(manifest["apiVersion"], ref.kind, ref.namespace, ref.name, digest)


RETRY_KEY = "retryRollout"


def configmap_name(bundle: str, instance: str = DEFAULT_INSTANCE) -> str:
    """`gitgate-<bundle>`; another gitgate instance on the same API server adds its name."""
    prefix = "gitgate-" if instance == DEFAULT_INSTANCE else f"gitgate-{instance}."
    return prefix + bundle.replace("/", ".")


def to_configmap(inventory: Inventory) -> Manifest:
    data = {
        "bundle": inventory.bundle, "revision": inventory.revision, "digest": inventory.digest,
        "verdict": inventory.verdict, "reasons": json.dumps(list(inventory.reasons)),
        "message": inventory.message, "since": inventory.since,
        "lastApplied": inventory.last_applied, "lastFullApply": inventory.last_full_apply,
        "objects": json.dumps([e.as_dict() for e in inventory.entries], sort_keys=True),
        "source": inventory.source,
        "labels": json.dumps(dict(inventory.labels), sort_keys=True),
    }
    if inventory.progression.rollout:
        data["rollout"] = inventory.progression.rollout
    if inventory.progression.hooks:
        data["hooks"] = inventory.progression.hooks
    if inventory.overrides_behind:
        data["overridesBehind"] = json.dumps(list(inventory.overrides_behind))
    data["appliedRevision"] = inventory.applied_revision
    data["appliedDigest"] = inventory.applied_digest
    if inventory.clusters_behind:
        data["clustersBehind"] = json.dumps(dict(inventory.clusters_behind), sort_keys=True)
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": configmap_name(inventory.bundle, inventory.instance),
                         "namespace": NAMESPACE,
                         "labels": {INVENTORY_LABEL: "true", INSTANCE_LABEL: inventory.instance,
                                    "app.kubernetes.io/managed-by": "gitgate"}},
            "data": data}


def from_configmap(configmap: Manifest) -> Inventory:
    data = configmap.get("data") or {}
    entries = tuple(Entry(e["apiVersion"], e["kind"], e.get("namespace", ""), e["name"],
                          e.get("hash", "")) for e in json.loads(data.get("objects") or "[]"))
    return Inventory(
        bundle=data.get("bundle", configmap["metadata"]["name"].removeprefix("gitgate-")),
        entries=entries, revision=data.get("revision", ""), digest=data.get("digest", ""),
        verdict=data.get("verdict", ""), reasons=tuple(json.loads(data.get("reasons") or "[]")),
        message=data.get("message", ""), since=data.get("since", ""),
        last_applied=data.get("lastApplied", ""),
        last_full_apply=data.get("lastFullApply", ""), source=data.get("source", ""),
        labels=tuple(sorted(json.loads(data.get("labels") or "{}").items())),
        progression=Progression(data.get("rollout", ""), data.get("hooks", ""),
                                data.get(RETRY_KEY, "")),
        overrides_behind=tuple(_str_list(data.get("overridesBehind"))),
        **_applied(data),
        instance=(configmap["metadata"].get("labels") or {}).get(INSTANCE_LABEL,
                                                                  DEFAULT_INSTANCE))


_WRITTEN = {"apply", "suspended", "halted"}  # verdicts whose pass wrote the templates


def _applied(data: dict[str, str]) -> dict[str, Any]:
    """What is live. An inventory from before these fields were kept: its revision was
    applied when its verdict wrote the templates, else what was applied is not known."""
    if "appliedRevision" in data:
        try:
            behind = json.loads(data.get("clustersBehind") or "{}")
        except ValueError:
            behind = {"*": ""}  # unreadable: no cluster is known to run anything
        return {"applied_revision": data["appliedRevision"],
                "applied_digest": data.get("appliedDigest", ""),
                "clusters_behind": tuple(sorted((str(k), str(v)) for k, v in behind.items()))
                if isinstance(behind, dict) else (("*", ""),)}
    written = data.get("verdict") in _WRITTEN and bool(data.get("lastApplied"))
    return {"applied_revision": data.get("revision", "") if written else "",
            "applied_digest": data.get("digest", "") if written else ""}


def _str_list(text: str | None) -> list[str]:
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return ["*"]  # unreadable: every cluster may be behind (fail closed)
    return [str(v) for v in value] if isinstance(value, list) else ["*"]


def retry_request(inventory: Inventory, moment: str) -> Manifest:
    """The one field `gitgate resume` writes into a bundle's inventory: a request to retry
    its halted rollout. It is applied under its own field manager, so the reconciler's
    inventory writes (which never set it) leave it in place, even mid-pass."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": configmap_name(inventory.bundle, inventory.instance),
                         "namespace": NAMESPACE},
            "data": {RETRY_KEY: moment}}


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
         keep: frozenset[ObjectRef] = frozenset()) -> Diff:
    """What to send (changed, new, or everything on resync), what is unchanged, and what left
    Git (to prune). Objects in `keep` (held through a dependency) are neither sent nor pruned.
    On resync, `same_as_inventory` names what is sent only to find drift."""
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
        recorded = entry is not None and entry.hash == digest
        if resync or not recorded:
            to_apply.append(obj)
            if recorded:
                same.add(ref)
        else:
            unchanged.append(ref)
    to_prune = tuple(e for ref, e in sorted(old.items()) if ref not in wanted and ref not in keep)
    return Diff(tuple(to_apply), tuple(unchanged), to_prune, frozenset(same))


def mass_prune(prunes: int, managed: int) -> bool:
    """More than half of everything gitgate manages, or all of it, is going away."""
    return managed > 0 and prunes > 0 and (prunes * 2 > managed or prunes == managed)
