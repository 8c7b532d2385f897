"""What the CLI reads and asks of gitgate's recorded state outside a pass: the status of
every bundle (its inventory and what Karmada did with it), the retry of halted rollouts
(`resume`), and Karmada's member clusters (`pause --clusters`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from gitgate.apiserver.ports import ClusterPort, Lister
from gitgate.apply.inventory import DEFAULT_INSTANCE, NAMESPACE, Inventory
from gitgate.apply.ledger import read_inventories
from gitgate.apply.ledger import recorded_instances as recorded_instances
from gitgate.apply.members import member_clusters
from gitgate.apply.recordcache import RecordCache
from gitgate.apply.recordformat import RECORD_LABEL, bundle_name, retry_request
from gitgate.errors import KubeError
from gitgate.model.ownership import INSTANCE_LABEL
from gitgate.model.shardmap import ShardMap
from gitgate.passes.karmadareads import Observation, observe
from gitgate.progression.rollouts import halted_rollouts
from gitgate.source.gateguard import GateReport
from gitgate.source.signatures import Signature
from gitgate.timespec import rfc3339

RESUME_MANAGER = "gitgate-resume"


@dataclass(frozen=True)
class Recorded:
    inventories: list[Inventory]
    observation: Observation
    provenance: dict[str, Any] | None = None  # as the running loop recorded it
    shards: ShardMap | None = None  # with `run --shard`: the replicas' agreed assignment


def recorded_status(cluster: ClusterPort, instance: str,
                    records: RecordCache | None = None) -> Recorded:
    """Every bundle's inventory and what Karmada did with it (an unreadable Karmada is the
    observation's error; unreadable inventories raise GitgateError), and the provenance the
    running loop recorded. `records`: the running loop's records' cache, when it reads."""
    inventories = list(read_inventories(cluster, instance, records).values())
    return Recorded(inventories, observe(cluster, inventories),
                    read_document(cluster, instance, "provenance"),
                    ShardMap.from_dict(read_document(cluster, instance, "shards")))


class BundleEvent(TypedDict):
    """An event about a bundle's Bundle, as `describe` and the bundle's page show it."""

    type: str | None  # Normal or Warning
    reason: str | None
    action: str | None
    note: str | None
    at: str | None  # RFC 3339


def _said(value: object) -> str | None:
    return None if value is None else str(value)


def bundle_events(cluster: Lister, inventory: Inventory) -> list[BundleEvent]:
    """The events about a bundle's Bundle, oldest first (none when they cannot be read)."""
    name = bundle_name(inventory.bundle, inventory.instance)
    try:
        found = cluster.list_objects("events.k8s.io/v1", "Event", NAMESPACE,
                                     f"{RECORD_LABEL}={name[:63].strip('.-') or 'bundle'}")
    except KubeError:
        return []
    events = [BundleEvent(type=_said(e.get("type")), reason=_said(e.get("reason")),
                          action=_said(e.get("action")), note=_said(e.get("note")),
                          at=_said(e.get("eventTime")
                                   or (e.get("metadata") or {}).get("creationTimestamp")))
              for e in found if (e.get("regarding") or {}).get("name") == name]
    return sorted(events, key=lambda e: str(e["at"] or ""))


def provenance_document(signature: Signature | None, gates: GateReport | None,
                        in_force: str | None) -> dict[str, Any]:
    """Who signed the head and where the freeze files come from (verification on: flags or
    gitgate.yaml's `verify:` / `gates.signers`); empty when neither is checked."""
    doc: dict[str, Any] = {}
    if signature is not None:
        doc["signature"] = {**signature.as_dict(), "inForce": in_force,
                            "message": signature.said()}
    if gates is not None:
        doc["gateTrust"] = gates.as_dict()
    return doc


def _record_name(instance: str, what: str) -> str:
    """`gitgate.provenance`, `gitgate.overview`: no inventory (`gitgate-...`) can be named so."""
    return f"gitgate.{what}" if instance == DEFAULT_INSTANCE else f"gitgate.{instance}.{what}"


def record_document(cluster: ClusterPort, instance: str, what: str,
                    doc: dict[str, Any]) -> None:
    """What the loop keeps for the CLI and the web page beside the Bundles, one ConfigMap
    each: `provenance` (who signed the head, where the freeze files come from, for `status`)
    and `overview` (gates, rollouts, last changes, for `gitgate ui`). Raises KubeError."""
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": _record_name(instance, what), "namespace": NAMESPACE,
        "labels": {INSTANCE_LABEL: instance}},
        "data": {what: json.dumps(doc, sort_keys=True)}})


PART_LABEL = "gitgate.io/part-of"  # on each replica's part of a record: the record it is of
PART_ANNOTATION = "gitgate.io/part"  # the replica whose part it is


def _part_name(instance: str, what: str, part: str) -> str:
    tail = re.sub(r"[^a-z0-9-]", "-", part.lower()).strip("-")[:120] or "part"
    return f"{_record_name(instance, what)}.{tail}"


def record_part(cluster: ClusterPort, instance: str, what: str, part: str,
                doc: dict[str, Any]) -> None:
    """One replica's part of a record (`run --shard`: each replica records the overview of
    its own bundles, so no two replicas write one object). Raises KubeError."""
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": _part_name(instance, what, part), "namespace": NAMESPACE,
        "labels": {INSTANCE_LABEL: instance, PART_LABEL: what},
        "annotations": {PART_ANNOTATION: part}},
        "data": {what: json.dumps(doc, sort_keys=True)}})


def read_parts(cluster: Lister, instance: str, what: str) -> dict[str, dict[str, Any]]:
    """Every replica's part of a record, by replica, with one list (none when it cannot be
    read: the reader goes on without them)."""
    try:
        found = cluster.list_objects("v1", "ConfigMap", NAMESPACE,
                                     f"{INSTANCE_LABEL}={instance},{PART_LABEL}={what}")
    except KubeError:
        return {}
    parts: dict[str, dict[str, Any]] = {}
    for item in found:
        meta = item.get("metadata") or {}
        part = (meta.get("annotations") or {}).get(PART_ANNOTATION)
        try:
            doc = json.loads((item.get("data") or {}).get(what) or "null")
        except ValueError:
            continue
        if isinstance(part, str) and part and isinstance(doc, dict):
            parts[part] = doc
    return parts


def delete_part(cluster: ClusterPort, instance: str, what: str, part: str) -> None:
    """Raises KubeError."""
    cluster.delete("v1", "ConfigMap", NAMESPACE, _part_name(instance, what, part))


def read_document(cluster: ClusterPort, instance: str, what: str, *,
                  strict: bool = False) -> dict[str, Any] | None:
    """As `record_document` left it; None when none was written or it cannot be read (the
    reader goes on without it). `strict`: None only when none was written; KubeError or
    ValueError when it cannot be read (the loop's trust anchors: never read as absent)."""
    try:
        found = cluster.get("v1", "ConfigMap", NAMESPACE, _record_name(instance, what))
        doc = json.loads(((found or {}).get("data") or {}).get(what) or "null")
    except (KubeError, ValueError):
        if strict:
            raise
        return None
    return doc if isinstance(doc, dict) and doc else None


def retry_halted(cluster: ClusterPort, instance: str, names: list[str], now: datetime,
                 dry_run: bool) -> list[str]:
    """Ask the halted rollouts of `names` to try their wave again: one field in each
    inventory, under its own field manager (a running loop's writes leave it alone); the next
    pass restarts the wave's timers. Returns a line per rollout asked."""
    halted = halted_rollouts(read_inventories(cluster, instance), names)
    for inventory, _ in halted:
        if not dry_run:
            cluster.apply(retry_request(inventory, rfc3339(now)), manager=RESUME_MANAGER)
    return [f"retry the halted rollout of {inventory.bundle} at wave {state.wave + 1} "
            f"(halted: {state.halted})" for inventory, state in halted]


def member_names(cluster: Lister) -> frozenset[str]:
    """Karmada's member clusters. Raises KubeError (404: not a Karmada control plane)."""
    return frozenset(member_clusters(cluster))
