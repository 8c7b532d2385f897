"""Karmada's resource selector rules, as its override manager and resource detector apply them
(karmada `pkg/util/selector.go`, `pkg/util/overridemanager`). Pure functions over manifests.

A selector names apiVersion and kind (both must be equal), optionally a namespace, then a
name (which wins over a label selector when both are given), else a label selector (none:
every object of that kind). A namespaced policy acts only in its own namespace; an override
policy without selectors acts on every object it can reach.
"""

from __future__ import annotations

from typing import Any

from gitgate.model import Manifest

GROUP = "policy.karmada.io"
OVERRIDE_KINDS = frozenset({"OverridePolicy", "ClusterOverridePolicy"})
PROPAGATION_KINDS = frozenset({"PropagationPolicy", "ClusterPropagationPolicy"})
CLUSTER_WIDE_KINDS = frozenset({"ClusterOverridePolicy", "ClusterPropagationPolicy",
                                "WorkloadRebalancer", "ResourceInterpreterCustomization"})
# Karmada objects that change what members run for the objects they name, as overrides do:
# autoscalers set replicas, a rebalancer reschedules, an interpreter customization changes
# how Karmada reads replicas, health and status of a kind
SCALERS = frozenset({("autoscaling.karmada.io", "FederatedHPA"),
                     ("autoscaling.karmada.io", "CronFederatedHPA")})
REBALANCER = ("apps.karmada.io", "WorkloadRebalancer")
INTERPRETER = ("config.karmada.io", "ResourceInterpreterCustomization")


def _group(obj: Manifest) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def is_control_plane(obj: Manifest) -> bool:
    """An object of one of Karmada's own API groups (`karmada.io` and its subgroups): read by
    Karmada's controllers on the control plane, never a template to send to members."""
    group = _group(obj)
    return group == "karmada.io" or group.endswith(".karmada.io")


def is_override(obj: Manifest) -> bool:
    return _group(obj) == GROUP and obj.get("kind") in OVERRIDE_KINDS


def is_acting(obj: Manifest) -> bool:
    """A Karmada object that belongs to the bundles of the objects it acts on: an override
    policy, a (Cron)FederatedHPA, a WorkloadRebalancer, a ResourceInterpreterCustomization."""
    kind = (_group(obj), obj.get("kind"))
    return is_override(obj) or kind in SCALERS or kind in (REBALANCER, INTERPRETER)


def is_propagation(obj: Manifest) -> bool:
    return _group(obj) == GROUP and obj.get("kind") in PROPAGATION_KINDS


def _requirement_matches(requirement: Any, labels: dict[str, str]) -> bool:
    if not isinstance(requirement, dict):
        return False
    key, operator = requirement.get("key"), requirement.get("operator")
    values = requirement.get("values") or []
    if not isinstance(key, str) or not isinstance(values, list):
        return False
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an operator the API server refuses: matches nothing (as Karmada does)


def label_selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics: every matchLabels pair and every matchExpressions
    requirement holds; an empty selector matches everything; a malformed one nothing."""
    if not isinstance(selector, dict):
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        return False
    return (all(labels.get(str(k)) == str(v) for k, v in match_labels.items())
            and all(_requirement_matches(r, labels) for r in expressions))


def _meta(obj: Manifest) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def resource_matches(obj: Manifest, selector: Any) -> bool:
    """One ResourceSelector against one object (Karmada's ResourceSelectorPriority > 0)."""
    if not isinstance(selector, dict):
        return False
    meta = _meta(obj)
    if (selector.get("apiVersion") != obj.get("apiVersion")
            or selector.get("kind") != obj.get("kind")):
        return False
    if selector.get("namespace") and selector["namespace"] != (meta.get("namespace") or ""):
        return False
    if selector.get("name"):
        return bool(selector["name"] == meta.get("name"))
    if selector.get("labelSelector") is None:
        return True
    labels = meta.get("labels") or {}
    return label_selector_matches(selector["labelSelector"],
                                  {str(k): str(v) for k, v in labels.items()})


def selectors_of(policy: Manifest) -> list[Any]:
    """The ResourceSelectors of a policy, or what another acting object names, as selectors:
    an autoscaler's scaleTargetRef, a rebalancer's workloads, an interpreter's target kind."""
    spec = policy.get("spec")
    if not isinstance(spec, dict):
        return []
    kind = (_group(policy), policy.get("kind"))
    if kind in SCALERS:
        target = spec.get("scaleTargetRef")
        return [_named(target)] if isinstance(target, dict) else [{}]
    if kind == REBALANCER:
        workloads = spec.get("workloads")
        return ([_named(w, namespaced=True) for w in workloads if isinstance(w, dict)]
                if isinstance(workloads, list) else [{}])
    if kind == INTERPRETER:
        target = spec.get("target")
        return ([{"apiVersion": target.get("apiVersion"), "kind": target.get("kind")}]
                if isinstance(target, dict) else [{}])
    selectors = spec.get("resourceSelectors")
    return selectors if isinstance(selectors, list) else []


def _named(ref: dict[str, Any], namespaced: bool = False) -> dict[str, Any]:
    out = {"apiVersion": ref.get("apiVersion"), "kind": ref.get("kind"),
           "name": ref.get("name") or "\0"}  # a reference without a name names nothing
    if namespaced and ref.get("namespace"):
        out["namespace"] = ref["namespace"]
    return out


def policy_selects(policy: Manifest, obj: Manifest) -> bool:
    """Whether Karmada applies `policy` (an override or propagation policy) to `obj`. Karmada's
    own objects are never selected: gitgate never sends them to members."""
    if is_control_plane(obj):
        return False
    if policy.get("kind") not in CLUSTER_WIDE_KINDS:
        namespace = _meta(policy).get("namespace") or ""
        if not namespace or namespace != (_meta(obj).get("namespace") or ""):
            return False
    selectors = selectors_of(policy)
    if not selectors:
        return is_override(policy)  # an override without selectors acts on all it reaches
    return any(resource_matches(obj, s) for s in selectors)


def acts_on(actor: Manifest, obj: Manifest) -> bool:
    """Whether an acting object (`is_acting`) changes what members run for `obj`."""
    return is_acting(actor) and policy_selects(actor, obj)


def may_act_on(actor: Manifest, api_version: str, namespace: str, kind: str,
               name: str) -> bool:
    """Whether `actor` could act on an object known only by its identity (an inventory
    entry of a bundle that failed to render): its labels are unknown, so a label selector is
    taken to match (fail closed)."""
    return is_acting(actor) and may_select(actor, api_version, namespace, kind, name)


def may_select(policy: Manifest, api_version: str, namespace: str, kind: str,
               name: str) -> bool:
    """Whether `policy` could select an object known only by its identity: its labels are
    unknown, so a label selector is taken to match (fail closed)."""
    actor = policy
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    obj = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    spec = actor.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("resourceSelectors"), list):
        loose = [{k: v for k, v in s.items() if k != "labelSelector"} if isinstance(s, dict)
                 else s for s in spec["resourceSelectors"]]
        actor = {**actor, "spec": {**spec, "resourceSelectors": loose}}
    return policy_selects(actor, obj)
