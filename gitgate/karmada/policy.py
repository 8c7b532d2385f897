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
from gitgate.model.ownership import DEFAULT_INSTANCE

API_VERSION = "policy.karmada.io/v1alpha1"
GROUP = "policy.karmada.io"
POLICY_KINDS = {"PropagationPolicy", "ClusterPropagationPolicy"}
_NOT_DNS = re.compile(r"[^a-z0-9.-]+")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# The highest int32: Karmada lets a policy preempt another (PolicyPreemption feature gate)
# only with a strictly higher priority, and picks the highest priority among the policies
# that match a new template; no policy can outrank gitgate's for a bundle's templates.
PRIORITY = 2**31 - 1


def policy_name(bundle: str, instance: str = DEFAULT_INSTANCE) -> str:
    """The name of the bundle's generated policies: `gitgate-<bundle>` for the default
    instance, `gitgate.<instance>.<bundle>` for another ('/' written '.' so that `shop/carts`
    and `shop-carts` differ). No default-instance name starts `gitgate.`, and the instance is
    one DNS label, so no two instances share a name. A DNS-1123 subdomain; one longer than
    253 characters is cut and ends in a hash of the whole."""
    return _fitted(_base(bundle, instance))


def _subdomain(text: str) -> str:
    """`text` as a DNS-1123 subdomain: lower case, other characters '-', each label starting
    and ending with a letter or digit (a valid name is left as it is)."""
    labels = _NOT_DNS.sub("-", text.lower()).split(".")
    return ".".join(label.strip("-") for label in labels if label.strip("-"))


def _instance_label(instance: str) -> str:
    """The instance as one DNS label: itself when it is one, else made one and told apart
    by a hash of the name it was made from."""
    if len(instance) <= 63 and _DNS_LABEL.match(instance):
        return instance
    made = _subdomain(instance).replace(".", "-")[:40].strip("-")
    return f"{made or 'i'}-{_digest(instance, 8)}"


def _base(bundle: str, instance: str) -> str:
    stored = bundle.replace("/", ".")
    if instance == DEFAULT_INSTANCE:
        name = _subdomain(f"gitgate-{stored}")
        if name.startswith("gitgate-"):
            return name
        # a bundle whose first folder has no letter or digit (never a valid name before)
        return f"gitgate-{_subdomain(stored) or 'b'}-{_digest(bundle, 8)}"
    return f"gitgate.{_instance_label(instance)}.{_subdomain(stored) or _digest(bundle, 8)}"


def _digest(text: str, size: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:size]


def _fitted(name: str) -> str:
    """`name`, or when longer than a name may be, its first 242 characters and a hash of it."""
    if len(name) <= 253:
        return name
    return f"{name[:242].rstrip('-.')}-{_digest(name, 10)}"


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


def generated_policies(bundle: Bundle, placement: Manifest | None, verdict: BundleVerdict,
                       instance: str = DEFAULT_INSTANCE) -> list[Manifest]:
    """One PropagationPolicy per namespace the bundle touches, one ClusterPropagationPolicy
    for its cluster-scoped objects; none without a placement or when it ships its own.
    Karmada's own objects (policies, overrides, interpreter customizations, FederatedHPAs,
    ...) are read on the control plane and never selected."""
    if placement is None or any(is_policy(o) for o in bundle.objects):
        return []
    suspension = suspension_for(verdict)
    name = policy_name(bundle.name, instance)
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


def override_name(bundle: str, ref: ObjectRef, instance: str = DEFAULT_INSTANCE) -> str:
    """`<policy name>.<kind>.<name>` (`policy_name` before it is cut), cut with a hash when
    longer than a name may be."""
    return _fitted(_subdomain(f"{_base(bundle, instance)}.{ref.kind}.{ref.name}"))


def generated_overrides(bundle: Bundle, instance: str = DEFAULT_INSTANCE) -> list[Manifest]:
    """One OverridePolicy (ClusterOverridePolicy for a cluster-scoped object) per object the
    bundle's `clusters:` customizations change. Karmada applies every rule of a policy to
    every object it selects, so a policy selects one object: its rules are that object's
    JSON-patch operations, one rule per customization, each for its clusters."""
    out = []
    for found in bundle.customized:
        ref = found.ref
        selector: Manifest = {"apiVersion": found.api_version, "kind": ref.kind,
                              "name": ref.name}
        meta: Manifest = {"name": override_name(bundle.name, ref, instance),
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
