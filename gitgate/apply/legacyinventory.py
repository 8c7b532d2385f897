"""The inventory as releases before the Bundle resource kept it: a ConfigMap
`gitgate-<bundle>` in `gitgate-system`. Read to migrate it (written to the Bundle, then
deleted) and written by the tests that start from such a state. Pure encoding."""

from __future__ import annotations

import json
from typing import Any

from gitgate.apply.inventory import DEFAULT_INSTANCE, NAMESPACE, Entry, Inventory
from gitgate.apply.recordedreason import RecordedReason
from gitgate.model import Manifest
from gitgate.model.ownership import INSTANCE_LABEL, INVENTORY_LABEL
from gitgate.progression.record import Progression

RETRY_KEY = "retryRollout"


def configmap_name(bundle: str, instance: str = DEFAULT_INSTANCE) -> str:
    """`gitgate-<bundle>`; another gitgate instance on the same API server adds its name."""
    prefix = "gitgate-" if instance == DEFAULT_INSTANCE else f"gitgate-{instance}."
    return prefix + bundle.replace("/", ".")


def to_configmap(inventory: Inventory) -> Manifest:
    data = {
        "bundle": inventory.bundle, "revision": inventory.revision, "digest": inventory.digest,
        "verdict": inventory.verdict,
        "reasons": json.dumps([r.document() for r in inventory.reasons]),
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
        verdict=data.get("verdict", ""), reasons=tuple(
            RecordedReason.of(r) for r in json.loads(data.get("reasons") or "[]")),
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
