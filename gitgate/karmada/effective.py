"""What one member cluster runs: each bundle's objects with the overrides Karmada applies for
that cluster, from the bundle's `clusters:` customizations and from the override policies
in the repo. Pure: bundles, a cluster name (and its labels, when known) in, objects out.

Karmada's order: ClusterOverridePolicies, then OverridePolicies; within each, the policies
selecting by everything, then by label, then by name, then by policy name. Only `plaintext`
overriders are worked out here; other overriders of a repo policy are named in a note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gitgate.bundle.selectors import (
    is_control_plane,
    is_override,
    label_selector_matches,
    policy_selects,
    selectors_of,
)
from gitgate.karmada.policy import generated_overrides
from gitgate.model import Bundle, Manifest, ObjectRef
from gitgate.model.ownership import DEFAULT_INSTANCE
from gitgate.render.customize import apply_operations


@dataclass
class MemberView:
    cluster: str
    objects: dict[str, list[Manifest]] = field(default_factory=dict)  # per bundle
    changes: dict[str, list[tuple[ObjectRef, str, Manifest]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def cluster_matches(target: Any, cluster: str, labels: dict[str, str] | None) -> bool | None:
    """Karmada's ClusterMatches for a `targetCluster`; None when it takes what is not known
    offline (the cluster's labels or fields)."""
    if not isinstance(target, dict):
        return True  # no targetCluster: every cluster
    if cluster in (target.get("exclude") or []):
        return False
    if target.get("labelSelector") is not None:
        if labels is None:
            return None
        if not label_selector_matches(target["labelSelector"], labels):
            return False
    if target.get("fieldSelector"):
        return None
    names = target.get("clusterNames") or []
    return not names or cluster in names


def rules_of(policy: Manifest) -> list[Manifest]:
    spec = policy.get("spec") or {}
    rules = spec.get("overrideRules")
    if isinstance(rules, list) and rules:
        return [r for r in rules if isinstance(r, dict)]
    return [{"targetCluster": spec.get("targetCluster"), "overriders": spec.get("overriders")}]


def _priority(policy: Manifest, obj: Manifest) -> tuple[int, int, str]:
    cluster_first = 0 if policy.get("kind") == "ClusterOverridePolicy" else 1
    implicit = 0
    for selector in selectors_of(policy):
        if isinstance(selector, dict):
            implicit = max(implicit, 3 if selector.get("name") else
                           2 if selector.get("labelSelector") is not None else 1)
    return cluster_first, implicit, str((policy.get("metadata") or {}).get("name", ""))


def _placed_on(bundle: Bundle, cluster: str) -> bool:
    placement = bundle.source.options.placement or {}
    names = (placement.get("clusterAffinity") or {}).get("clusterNames")
    return not names or cluster in names


def member_view(bundles: list[Bundle], cluster: str, labels: dict[str, str] | None = None,
                instance: str = DEFAULT_INSTANCE) -> MemberView:
    view = MemberView(cluster)
    policies = [o for b in bundles for o in b.objects if is_override(o)]
    policies += [o for b in bundles for o in generated_overrides(b, instance)]
    for bundle in bundles:
        if bundle.failed or not _placed_on(bundle, cluster):
            continue
        for obj in bundle.objects:
            if is_control_plane(obj):
                continue
            view.objects.setdefault(bundle.name, []).append(
                _overridden(obj, policies, cluster, labels, view, bundle.name))
    return view


def _overridden(obj: Manifest, policies: list[Manifest], cluster: str,
                labels: dict[str, str] | None, view: MemberView, bundle: str) -> Manifest:
    ref = ObjectRef.of(obj)
    acting = sorted((p for p in policies if policy_selects(p, obj)),
                    key=lambda p: _priority(p, obj))
    for policy in acting:
        name = f"{policy['kind']} {ObjectRef.of(policy).name}"
        for rule in rules_of(policy):
            matched = cluster_matches(rule.get("targetCluster"), cluster, labels)
            if matched is None:
                target = json.dumps(rule.get("targetCluster"), sort_keys=True)
                view.notes.append(f"{name} targets {target}: {cluster}'s labels or fields "
                                  f"are not known here, so it is not applied to {ref} "
                                  "(`plan --cluster` with --kubeconfig reads them)")
                continue
            if not matched:
                continue
            overriders = rule.get("overriders") or {}
            others = sorted(k for k in overriders if k != "plaintext")
            if others:
                view.notes.append(f"{name}: {', '.join(others)} not shown for {ref} (only "
                                  "plaintext overriders are worked out here)")
            operations = [op for op in overriders.get("plaintext") or []
                          if isinstance(op, dict)]
            if not operations:
                continue
            try:
                obj = apply_operations(obj, operations)
            except ValueError as exc:  # Karmada would fail to apply it too
                view.notes.append(f"{name} cannot be applied to {ref}: {exc}")
                continue
            for op in operations:
                view.changes.setdefault(bundle, []).append((ref, name, op))
    return obj
