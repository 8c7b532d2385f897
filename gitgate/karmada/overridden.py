"""Whether a member cluster got the current overrides of an object. Pure.

Where Karmada records it (seen on the harness): the Work of a binding on a cluster (namespace
`karmada-es-<cluster>`, label `resourcebinding.karmada.io/permanent-id` as on the binding)
carries the annotations `policy.karmada.io/applied-overrides` (OverridePolicies) and
`policy.karmada.io/applied-cluster-overrides` (ClusterOverridePolicies): JSON lists of
`{policyName, overriders}`, one item per rule applied to that cluster. A Work whose dispatch
is suspended keeps what it last got, so an override changed since then is not there yet.
"""

from __future__ import annotations

import json
from typing import Any

from gitgate.bundle.selectors import policy_selects
from gitgate.karmada.effective import cluster_matches, rules_of
from gitgate.model import Manifest

APPLIED_OVERRIDES = "policy.karmada.io/applied-overrides"
APPLIED_CLUSTER_OVERRIDES = "policy.karmada.io/applied-cluster-overrides"
Applied = tuple[tuple[str, str], ...]  # sorted (policy name, canonical overriders)


def _compact(value: Any) -> Any:
    """Go's `omitempty`: empty lists, maps and nulls are not written."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def _canonical(overriders: Any) -> str:
    return json.dumps(_compact(overriders or {}), sort_keys=True, separators=(",", ":"))


def expected(template: Manifest, policies: list[Manifest], cluster: str,
             labels: dict[str, str] | None) -> tuple[Applied, Applied] | None:
    """What the Work of `template` on `cluster` should record (namespaced, cluster-wide);
    None when a rule targets clusters by what is not known (labels or fields)."""
    namespaced: list[tuple[str, str]] = []
    cluster_wide: list[tuple[str, str]] = []
    for policy in policies:
        if not policy_selects(policy, template):
            continue
        name = str((policy.get("metadata") or {}).get("name", ""))
        into = cluster_wide if policy.get("kind") == "ClusterOverridePolicy" else namespaced
        for rule in rules_of(policy):
            matched = cluster_matches(rule.get("targetCluster"), cluster, labels)
            if matched is None:
                return None
            if matched:
                into.append((name, _canonical(rule.get("overriders"))))
    return tuple(sorted(namespaced)), tuple(sorted(cluster_wide))


def applied(work: Manifest) -> tuple[Applied, Applied] | None:
    """What a Work records; None when its annotations cannot be read."""
    annotations = (work.get("metadata") or {}).get("annotations") or {}
    out = []
    for key in (APPLIED_OVERRIDES, APPLIED_CLUSTER_OVERRIDES):
        try:
            items = json.loads(annotations.get(key) or "[]")
        except ValueError:
            return None
        if not isinstance(items, list):
            return None
        out.append(tuple(sorted((str(i.get("policyName", "")), _canonical(i.get("overriders")))
                                for i in items if isinstance(i, dict))))
    return out[0], out[1]


def lag(template: Manifest, policies: list[Manifest], cluster: str,
        labels: dict[str, str] | None, work: Manifest) -> str | None:
    """Why `cluster` does not run the current overrides of `template` (None: it does, or it
    cannot be told)."""
    wanted, got = expected(template, policies, cluster, labels), applied(work)
    if wanted is None or got is None or wanted == got:
        return None
    names = sorted({n for part in wanted for n, _ in part} ^ {n for part in got for n, _ in part}
                   | {n for w, g in zip(wanted, got, strict=True) for n, c in w if (n, c) not in g})
    shown = ", ".join(names) or "their order"
    return (f"{cluster} has not got the current overrides yet ({shown}): Karmada has not "
            "dispatched the change there")
