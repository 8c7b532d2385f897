"""What Karmada's scheduler, execution and work-status controllers write into a binding, for
the emulator: `spec.clusters` from the policy's placement, the `Scheduled` and `FullyApplied`
conditions, and `status.aggregatedStatus[]` per cluster. A cluster whose dispatch is suspended
keeps what it last received; the others get the template's current generation at once.

Members run no controllers (as in ../shared/karmada-harness): a workload Karmada interprets
health for is `Unhealthy` after each new generation until a test reports it healthy with
`ApiState.report`; every other kind is `Healthy` once applied, as Karmada treats kinds without
a health interpreter."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

HEALTH_INTERPRETED = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Service",
                      "Ingress", "PersistentVolumeClaim", "Pod", "PodDisruptionBudget"}
GENERATION_REPORTED = {"Deployment", "ReplicaSet", "DaemonSet", "StatefulSet"}
_ROLLING = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Pod"}


@dataclass
class Member:
    """One template on one member cluster."""

    applied: bool = True
    health: str = "Healthy"
    runs: int | None = None  # the template generation the member runs
    message: str = ""
    status: dict | None = None  # the member object's status (a Job's conditions, say)
    data: Any = None  # what the member runs of a ConfigMap's `data` (its overrides applied)


def placement_clusters(policy: dict, known_clusters: Callable[[], list[str]]) -> list[str]:
    """`clusterAffinity.clusterNames`, else every Cluster the API server knows (only then
    looked up: it takes a scan of the store)."""
    affinity = ((policy.get("spec") or {}).get("placement") or {}).get("clusterAffinity") or {}
    names = affinity.get("clusterNames")
    return sorted(set(names)) if names else sorted(known_clusters())


def suspended_on(suspension: Any, clusters: list[str]) -> set[str]:
    suspension = suspension or {}
    if suspension.get("dispatching"):
        return set(clusters)
    return set((suspension.get("dispatchingOnClusters") or {}).get("clusterNames") or [])


def dispatch(members: dict[str, Member], template: dict, clusters: list[str],
             suspension: Any) -> dict[str, Member]:
    """Members after the controllers ran: clusters not suspended get the current template."""
    kind = template.get("kind", "")
    generation = (template.get("metadata") or {}).get("generation")
    held = suspended_on(suspension, clusters)
    out = {}
    for cluster in clusters:
        member = members.get(cluster)
        if cluster in held:
            if member is not None:
                out[cluster] = member
            continue
        runs = generation if kind in GENERATION_REPORTED else None
        if member is None or member.runs != runs or not member.applied:
            rolling = kind in _ROLLING
            member = Member(True, "Unhealthy" if rolling else "Healthy", runs)
        out[cluster] = member
    return out


def binding_status(members: dict[str, Member], clusters: list[str]) -> dict:
    when = "2026-01-01T00:00:00Z"
    items = []
    for cluster in sorted(members):
        member = members[cluster]
        item: dict[str, Any] = {"clusterName": cluster, "applied": member.applied}
        if member.applied:
            item["health"] = member.health
        if member.message:
            item["appliedMessage"] = member.message
        if member.runs is not None:
            item["status"] = {"generation": member.runs, "resourceTemplateGeneration":
                              member.runs}
        if member.status is not None:
            item["status"] = {**item.get("status", {}), **member.status}
        items.append(item)
    scheduled = {"type": "Scheduled", "status": "True" if clusters else "False",
                 "reason": "Success" if clusters else "NoClusterFit",
                 "message": "Binding has been scheduled successfully." if clusters else
                 "0/0 clusters are available: no cluster matches the placement.",
                 "lastTransitionTime": when}
    fully = all(m.applied for m in members.values()) and len(members) == len(clusters)
    applied = {"type": "FullyApplied", "status": "True" if fully else "False",
               "reason": "FullyAppliedSuccess" if fully else "FullyAppliedFailed",
               "message": "All works have been successfully applied" if fully else
               "Failed to apply all works, see status.aggregatedStatus for details",
               "lastTransitionTime": when}
    return {"aggregatedStatus": items, "conditions": [scheduled, applied]}


OVERRIDE_KINDS = {("policy.karmada.io", "OverridePolicy"),
                  ("policy.karmada.io", "ClusterOverridePolicy")}
BINDING_ID_LABEL = "resourcebinding.karmada.io/permanent-id"


def _selects(policy: dict, template: dict) -> bool:
    """Karmada's ResourceMatches, as far as the tests use it: apiVersion, kind, namespace,
    name, matchLabels; no selectors: everything the policy reaches."""
    meta, t_meta = policy.get("metadata") or {}, template.get("metadata") or {}
    if policy.get("kind") == "OverridePolicy" and meta.get("namespace") != t_meta.get(
            "namespace"):
        return False
    selectors = (policy.get("spec") or {}).get("resourceSelectors") or []
    if not selectors:
        return True
    for selector in selectors:
        if (selector.get("apiVersion"), selector.get("kind")) != (
                template.get("apiVersion"), template.get("kind")):
            continue
        if selector.get("namespace") and selector["namespace"] != t_meta.get("namespace"):
            continue
        if selector.get("name"):
            if selector["name"] == t_meta.get("name"):
                return True
            continue
        wanted = (selector.get("labelSelector") or {}).get("matchLabels") or {}
        labels = t_meta.get("labels") or {}
        if all(labels.get(k) == v for k, v in wanted.items()):
            return True
    return False


def runs_on(template: dict, policies: list[dict], cluster: str) -> Any:
    """A template's `data` as `cluster` runs it: the `plaintext` overriders (`replace`,
    `add`, `remove` under `/data/`) of the override policies selecting it for that cluster,
    ClusterOverridePolicies first, each kind by name (Karmada's order)."""
    data = json.loads(json.dumps(template.get("data")))
    ordered = sorted(policies, key=lambda p: (p.get("kind") != "ClusterOverridePolicy",
                                              p["metadata"]["name"]))
    for policy in ordered:
        if not _selects(policy, template):
            continue
        for rule in (policy.get("spec") or {}).get("overrideRules") or []:
            names = (rule.get("targetCluster") or {}).get("clusterNames") or []
            if names and cluster not in names:
                continue
            for op in (rule.get("overriders") or {}).get("plaintext") or []:
                path = str(op.get("path", ""))
                if not path.startswith("/data/"):
                    continue
                key = path.removeprefix("/data/").replace("~1", "/").replace("~0", "~")
                data = dict(data or {})
                if op.get("operator") == "remove":
                    data.pop(key, None)
                else:
                    data[key] = op.get("value")
    return data


def applied_overrides(template: dict, policies: list[dict], cluster: str) -> dict[str, str]:
    """The annotations Karmada writes on a Work: the override rules applied for `cluster`
    (targets by cluster name only: the emulator's Clusters carry no labels)."""
    out: dict[str, list] = {}
    for policy in sorted(policies, key=lambda p: p["metadata"]["name"]):
        if not _selects(policy, template):
            continue
        key = ("policy.karmada.io/applied-cluster-overrides"
               if policy.get("kind") == "ClusterOverridePolicy"
               else "policy.karmada.io/applied-overrides")
        for rule in (policy.get("spec") or {}).get("overrideRules") or []:
            names = (rule.get("targetCluster") or {}).get("clusterNames") or []
            if names and cluster not in names:
                continue
            out.setdefault(key, []).append({"policyName": policy["metadata"]["name"],
                                            "overriders": rule.get("overriders") or {}})
    return {key: json.dumps(items) for key, items in out.items()}
