"""A bundle's state and each member cluster's state as gitgate shows them: one record each,
built once from the bundle's record and what Karmada reports, that `status` (table, JSON,
YAML), `get`, `describe`, the loop's `/status` and the web page all render, and one JSON
document for each (a `Status` bundle and a `clusterState` in
docs/schema/gitgate.io_v1alpha1.json). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.apply.standing import Standing, standing_of
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health
from gitgate.model import ReasonKind
from gitgate.model.shardmap import ShardMap
from gitgate.status.analysisrecord import analysis_rows


@dataclass(frozen=True)
class ClusterRecord:
    """A member cluster's state for one bundle: what Karmada reports, and the revision it
    runs as far as gitgate's writes decide it ("" for none)."""

    state: ClusterState
    revision: str
    applied: str  # the bundle's live revision

    @property
    def runs_other(self) -> str | None:
        """The revision it runs when that is not the bundle's live one (None: the live one)."""
        return None if self.revision == self.applied else self.revision

    def document(self) -> dict[str, Any]:
        return {**self.state.as_dict(), "revision": self.revision or None}

    @staticmethod
    def schema() -> dict[str, Any]:
        """The JSON Schema of its document (`clusterState` in
        docs/schema/gitgate.io_v1alpha1.json; `tools/schemas.py` writes it there)."""
        state = ClusterState.schema()
        return {**state, "properties": {**state["properties"], "revision": {
            "description": "the revision this cluster runs, as gitgate's writes decide it: the "
                           "applied one, or the one it kept while suspended (null: none yet); "
                           "in `status` and `/status`",
            "type": ["string", "null"]}}}


@dataclass(frozen=True)
class BundleState:
    """`observed`: Karmada's report on the bundle was read (else `dispatch` is empty)."""

    record: Inventory
    dispatch: Dispatch
    standing: Standing
    observed: bool = True
    shards: ShardMap | None = None

    @classmethod
    def of(cls, record: Inventory, dispatch: Dispatch | None,
           shards: ShardMap | None = None) -> BundleState:
        return cls(record, dispatch or Dispatch(), standing_of(record), dispatch is not None,
                   shards)

    @property
    def name(self) -> str:
        return self.record.bundle

    @property
    def clusters(self) -> tuple[ClusterRecord, ...]:
        inv = self.record
        return tuple(ClusterRecord(c, inv.cluster_revision(c.name), inv.applied_revision)
                     for c in self.dispatch.clusters)

    @property
    def pending(self) -> bool:
        """The last attempted revision changes the bundle, and that change is not live."""
        inv = self.record
        return bool(inv.revision) and inv.applied_digest != inv.digest

    @property
    def revision_cell(self) -> str:
        """The live revision; `(tried abc1234)` beside it when a later one is not applied."""
        inv = self.record
        cell = inv.applied_revision[:12] or "-"
        if self.pending and inv.revision != inv.applied_revision:
            cell += f" (tried {inv.revision[:7]})"
        return cell

    @property
    def all_members(self) -> bool:
        """A bundle of Namespaces alone (policies aside): Karmada's namespace controller sends
        a Namespace to every member cluster by itself, with no binding to show per cluster.
        It skips `default`, its own and `kube-*` namespaces (its default
        --skipped-propagating-namespaces), and those labelled skip-auto-propagation (the
        record does not keep labels: such a bundle is shown as reaching all members)."""
        dispatch = self.dispatch
        return (not dispatch.clusters and not dispatch.propagated
                and any(e.kind == "Namespace" and "/" not in e.api_version
                        and not _karmada_skips(e.name) for e in self.record.entries))

    @property
    def gates(self) -> list[str]:
        return [r.gate for r in self.standing.reasons if r.kind != ReasonKind.ROLLOUT]

    def waiting_message(self) -> str:
        """Without a standing: what holds the bundle back in Karmada (an object nothing
        propagates, else the first cluster, not suspended, that is not ready)."""
        waiting = self.dispatch.waiting_on()
        return self.dispatch.message or (waiting[0].message if waiting else "")

    def document(self) -> dict[str, Any]:
        """The bundle as `status -o json`, `describe -o json` and the loop's `/status` show
        it: what gitgate decided, which revision is live (lastAppliedRevision) and which was
        last tried (lastAttemptedRevision; `revision` says the same, kept for older
        readers), and per member cluster what Karmada reports with the revision it runs;
        with shards, the replica whose shard holds it."""
        inv = self.record
        doc = {"name": inv.bundle, "verdict": inv.verdict, "revision": inv.revision,
               "lastAttemptedRevision": inv.revision or None,
               "lastAppliedRevision": inv.applied_revision or None,
               "pending": self.pending, "digest": inv.digest, "gates": self.gates,
               "reasons": [r.document() for r in self.standing.reasons],
               "since": inv.since or None, "lastApplied": inv.last_applied or None,
               **self.standing.as_dict(), "outcome": inv.message or None,
               "objects": len(inv.entries), **dispatch_document(inv.bundle, self.dispatch),
               "clusters": [c.document() for c in self.clusters],
               "allMembers": self.all_members, "analysis": analysis_rows(inv)}
        return doc if self.shards is None else {**doc, "shard": self.shards.owner(inv.bundle)}


def dispatch_document(bundle: str, dispatch: Dispatch) -> dict[str, Any]:
    """What Karmada reports of a bundle (the whole document of one gitgate has no record of)."""
    health: Health | None = dispatch.health
    return {"name": bundle, "health": str(health) if health else None,
            "dispatchMessage": dispatch.message,
            "clusters": [c.as_dict() for c in dispatch.clusters]}


def bundle_states(records: list[Inventory], seen: dict[str, Dispatch] | None,
                  shards: ShardMap | None = None) -> list[BundleState]:
    """Every bundle's state by name; `seen`: Karmada's report (None: not read)."""
    return [BundleState.of(inv, seen.get(inv.bundle) if seen is not None else None, shards)
            for inv in sorted(records, key=lambda i: i.bundle)]


def _karmada_skips(namespace: str) -> bool:
    return (namespace in ("default", "karmada-system", "karmada-cluster")
            or namespace.startswith(("karmada-es-", "kube-")))
