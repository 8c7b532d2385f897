"""Karmada PropagationPolicies for a bundle, and suspension on every policy of a suspended
bundle. Pure: bundle + placement + verdict -> policy manifests."""

from __future__ import annotations

import copy
import hashlib
import re

from gitgate.bundle.selectors import is_control_plane
from gitgate.model import (
    BUNDLE_LABEL,
    Bundle,
    BundleVerdict,
    Manifest,
    ObjectRef,
    Verdict,
    bundle_label_value,
)

API_VERSION = "policy.karmada.io/v1alpha1"
GROUP = "policy.karmada.io"
POLICY_KINDS = {"PropagationPolicy", "ClusterPropagationPolicy"}
_NOT_DNS = re.compile(r"[^a-z0-9.-]+")
# The highest int32: Karmada lets a policy preempt another (PolicyPreemption feature gate)
# only with a strictly higher priority, and picks the highest priority among the policies
# that match a new template; no policy can outrank gitgate's for a bundle's templates.
PRIORITY = 2**31 - 1


def policy_name(bundle: str) -> str:
    """`gitgate-<bundle>`, '/' written '.' so that `shop/carts` and `shop-carts` differ."""
    name = _NOT_DNS.sub("-", f"gitgate-{bundle}".lower().replace("/", ".")).strip("-.")
    return name[:253]


def is_policy(obj: Manifest) -> bool:
    ref = ObjectRef.of(obj)
    return ref.group == GROUP and ref.kind in POLICY_KINDS


def suspension_for(verdict: BundleVerdict) -> Manifest | None:
    """Karmada's `spec.suspension`: dispatching to all clusters, or only to the named ones.
    The two fields cannot be combined (Karmada's webhook refuses it)."""
    if verdict.verdict not in (Verdict.SUSPENDED, Verdict.HALTED):
        return None
    if verdict.suspend_clusters:
        return {"dispatchingOnClusters": {"clusterNames": list(verdict.suspend_clusters)}}
    return {"dispatching": True}


def _selector(obj: Manifest) -> Manifest:
    meta = obj["metadata"]
    selector = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"]}
    if meta.get("namespace"):
        selector["namespace"] = meta["namespace"]
    return selector


def generated_policies(bundle: Bundle, placement: Manifest | None,
                       verdict: BundleVerdict) -> list[Manifest]:
    """One PropagationPolicy per namespace the bundle touches, one ClusterPropagationPolicy
    for its cluster-scoped objects; none without a placement or when it ships its own.
    Karmada's own objects (policies, overrides, interpreter customizations, FederatedHPAs,
    ...) are read on the control plane and never selected."""
    if placement is None or any(is_policy(o) for o in bundle.objects):
        return []
    suspension = suspension_for(verdict)
    name = policy_name(bundle.name)
    by_namespace: dict[str, list[Manifest]] = {}
    for obj in (o for o in bundle.objects if not is_control_plane(o)):
        by_namespace.setdefault(obj["metadata"].get("namespace") or "", []).append(obj)
    policies = []
    for namespace, objects in sorted(by_namespace.items()):
        meta: Manifest = {"name": name, "labels": {BUNDLE_LABEL: bundle_label_value(bundle.name)}}
        kind = "ClusterPropagationPolicy"
        if namespace:
            meta["namespace"] = namespace
            kind = "PropagationPolicy"
        spec: Manifest = {
            "resourceSelectors": [_selector(o) for o in sorted(objects, key=ObjectRef.of)],
            "propagateDeps": True,
            "placement": copy.deepcopy(placement),
            "priority": PRIORITY,
            "preemption": "Always",
        }
        if suspension:
            spec["suspension"] = suspension
        policies.append({"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec})
    return policies


def override_name(bundle: str, ref: ObjectRef) -> str:
    """`gitgate-<bundle>.<kind>.<name>`, cut with a hash when longer than a name may be."""
    name = _NOT_DNS.sub("-", f"{policy_name(bundle)}.{ref.kind}.{ref.name}".lower()).strip("-.")
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[:242].rstrip('-.')}-{digest}"


def generated_overrides(bundle: Bundle) -> list[Manifest]:
    """One OverridePolicy (ClusterOverridePolicy for a cluster-scoped object) per object the
    bundle's `clusters:` customizations change. Karmada applies every rule of a policy to
    every object it selects, so a policy selects one object: its rules are that object's
    JSON-patch operations, one rule per customization, each for its clusters."""
    out = []
    for found in bundle.customized:
        ref = found.ref
        selector: Manifest = {"apiVersion": found.api_version, "kind": ref.kind,
                              "name": ref.name}
        meta: Manifest = {"name": override_name(bundle.name, ref),
                          "labels": {BUNDLE_LABEL: bundle_label_value(bundle.name)}}
        kind = "ClusterOverridePolicy"
        if ref.namespace:
            meta["namespace"] = selector["namespace"] = ref.namespace
            kind = "OverridePolicy"
        rules = [{"targetCluster": copy.deepcopy(rule.target_cluster),
                  "overriders": {"plaintext": copy.deepcopy(list(rule.operations))}}
                 for rule in found.rules]
        out.append({"apiVersion": API_VERSION, "kind": kind, "metadata": meta,
                    "spec": {"resourceSelectors": [selector], "overrideRules": rules}})
    return out


def with_suspension(objects: tuple[Manifest, ...], verdict: BundleVerdict) -> list[Manifest]:
    """The bundle's own policies carry the suspension too (others are returned as they are)."""
    suspension = suspension_for(verdict)
    out = []
    for obj in objects:
        if suspension and is_policy(obj):
            obj = copy.deepcopy(obj)
            spec = obj.setdefault("spec", {})
            spec.pop("suspension", None)
            spec["suspension"] = suspension
        out.append(obj)
    return out
