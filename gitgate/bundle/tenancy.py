"""What a tenant's bundle may write (pure): the rules of `tenants:` in gitgate.yaml, checked
over rendered bundles before anything is planned. A bundle that breaks one fails with
`OutsideTenant`, naming the object, the tenant and the rule; nothing of it is written, and
what it wrote before is neither changed nor pruned (a failed bundle's usual fate)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gitgate.bundle.selectors import is_propagation, selectors_of
from gitgate.errors import Reason
from gitgate.model import Bundle, Manifest, ObjectRef, Problem, join
from gitgate.model.kindscope import ScopeTable
from gitgate.model.rolloutspec import OPERATORS, ClusterSelector, Members, Requirement
from gitgate.model.tenantrules import (
    REACH_READ,
    in_namespaces,
    kind_name,
    object_rules,
    path_matches,
    tenants_of,
)
from gitgate.model.tenantspec import PLATFORM, Tenancy, Tenant

__all__ = ["BUNDLE_CONFIG", "implies", "kind_name", "path_matches", "police", "selector_of",
           "tenants_of", "unjudged"]

BUNDLE_CONFIG = "bundle.yaml"


def _object_rules(obj: Manifest, tenant: Tenant, scopes: ScopeTable) -> Iterable[str]:
    yield from object_rules(obj, tenant, scopes)
    if is_cluster_wide(obj):
        yield from _reach_rules(obj, tenant, scopes)


def _reach_rules(actor: Manifest, tenant: Tenant, scopes: ScopeTable) -> Iterable[str]:
    """A cluster-wide Karmada object of a tenant (a ClusterPropagationPolicy or
    ClusterOverridePolicy, a WorkloadRebalancer, an interpreter customization) is judged by
    everything it could select on the cluster, not only the repo's objects: each of its
    selectors must stay within the tenant's namespaces (a namespaced kind) or name one of
    the tenant's own Namespaces. A selector without a namespace selects in every namespace,
    and a cluster-scoped kind selected otherwise than as one of its Namespaces is not the
    tenant's to act on."""
    ref = ObjectRef.of(actor)
    said = f"tenant {tenant.name}"
    selectors = selectors_of(actor)
    if not selectors:
        yield (f"{ref} selects no resources, so it acts on every object it can reach: a "
               f"cluster-wide policy of {said} must name what it selects")
        return
    for index, selector in enumerate(selectors):  # 0-based, as every path in a message
        if not isinstance(selector, dict):
            yield f"{ref}: resourceSelectors[{index}] is not a resource selector"
            continue
        api_version = str(selector.get("apiVersion") or "")
        kind = str(selector.get("kind") or "")
        group = api_version.rpartition("/")[0]
        namespace = str(selector.get("namespace") or "")
        name = str(selector.get("name") or "")
        what = f"{ref}: resourceSelectors[{index}] ({kind or 'any kind'})"
        if (group, kind) == ("", "Namespace"):
            if not name or not in_namespaces(tenant, name):
                yield (f"{what} selects Namespaces beyond {said}'s "
                       f"({', '.join(tenant.namespaces) or 'none'}): name one of them")
            continue
        namespaced = scopes.namespaced(group, kind) if kind else None
        if namespaced is None:
            yield (f"{what}: {scopes.unknown_why(group, kind)}, so what it selects cannot be "
                   f"held to {said}'s namespaces")
        elif not namespaced:
            yield (f"{what} selects cluster-scoped objects, which are not {said}'s to act on "
                   "from a cluster-wide policy")
        elif not namespace:
            yield (f"{what} names no namespace, so it selects in every namespace of the "
                   f"cluster, beyond {said}'s ({', '.join(tenant.namespaces) or 'none'})")
        elif not in_namespaces(tenant, namespace):
            yield (f"{what} selects in namespace {namespace}, outside {said}'s namespaces "
                   f"({', '.join(tenant.namespaces) or 'none'})")


def selector_of(raw: Any) -> ClusterSelector | None:
    """A placement's `labelSelector` as a ClusterSelector; None for a shape gitgate does not
    read (which then proves nothing)."""
    if not isinstance(raw, dict):
        return None
    pairs = raw.get("matchLabels") or {}
    expressions = raw.get("matchExpressions") or []
    if not isinstance(pairs, dict) or not isinstance(expressions, list):
        return None
    requirements = []
    for item in expressions:
        if not isinstance(item, dict):
            return None
        values = item.get("values") or []
        if (item.get("operator") not in OPERATORS
                or not isinstance(item.get("key"), str) or not isinstance(values, list)):
            return None
        requirements.append(Requirement(item["key"], item["operator"],
                                        tuple(str(v) for v in values)))
    return ClusterSelector(tuple(sorted((str(k), str(v)) for k, v in pairs.items())),
                           tuple(requirements))


def _implied(part: Requirement, narrow: ClusterSelector) -> bool:
    """Whether every label set `narrow` matches satisfies `part`."""
    if part in narrow.match_expressions:
        return True
    value = dict(narrow.match_labels).get(part.key)
    ins = [set(r.values) for r in narrow.match_expressions
           if r.key == part.key and r.operator == "In"]
    absent = any(r.key == part.key and r.operator == "DoesNotExist"
                 for r in narrow.match_expressions)
    outs = [set(r.values) for r in narrow.match_expressions
            if r.key == part.key and r.operator == "NotIn"]
    wanted = set(part.values)
    if part.operator == "Exists":
        return value is not None or bool(ins)
    if part.operator == "In":
        return (value is not None and value in wanted) or any(s <= wanted for s in ins)
    if part.operator == "NotIn":
        return ((value is not None and value not in wanted) or absent
                or any(not s & wanted for s in ins) or any(wanted <= s for s in outs))
    return absent  # DoesNotExist


def implies(narrow: ClusterSelector, wide: ClusterSelector) -> bool:
    """Whether every cluster `narrow` selects is one `wide` selects, whatever labels the
    clusters carry now or later (so a cluster that joins tomorrow cannot slip through)."""
    return (all(_implied(Requirement(k, "In", (v,)), narrow) for k, v in wide.match_labels)
            and all(_implied(r, narrow) for r in wide.match_expressions))


@dataclass(frozen=True)
class _Choice:
    """Member clusters a placement, customization or wave reaches: the names it is limited
    to, else the labels it selects by; neither means every member cluster."""

    names: tuple[str, ...] = ()
    selector: ClusterSelector | None = None
    by_labels: bool = False  # it selects by labels (or fields) gitgate cannot read


def _choices(placement: Manifest) -> list[_Choice]:
    """Karmada matches a cluster only if it passes every part of an affinity (names, labels,
    fields); each of `clusterAffinities` may be the one in force."""
    affinities = [placement["clusterAffinity"]] if placement.get("clusterAffinity") else []
    affinities += [a for a in placement.get("clusterAffinities") or []]
    if not affinities:
        return [_Choice()]
    out = []
    for affinity in affinities:
        if not isinstance(affinity, dict):
            out.append(_Choice(by_labels=True))
            continue
        names = tuple(str(n) for n in affinity.get("clusterNames") or [])
        raw = affinity.get("labelSelector")
        selector = selector_of(raw) if raw else None
        out.append(_Choice(names, selector, bool(raw or affinity.get("fieldSelector"))))
    return out


def _outside(tenant: Tenant, choice: _Choice, members: Members | None) -> str:
    """Why `choice` may reach a cluster outside the tenant's; empty when it cannot."""
    if choice.names:
        bad = [n for n in choice.names if not _member_of(tenant, n, members)]
        if not bad:
            return ""
        if members is not None and members.error and tenant.clusters is None:
            return (f"names {', '.join(bad)}, and Karmada's Clusters cannot be read to see "
                    f"their labels ({members.error})")
        return f"names {', '.join(bad)}"
    if tenant.cluster_selector is not None and choice.selector is not None and implies(
            choice.selector, tenant.cluster_selector):
        return ""
    if choice.by_labels:
        return ("selects clusters by labels that do not imply the tenant's"
                if tenant.cluster_selector is not None else "selects clusters by labels")
    return "does not name its member clusters (it reaches every one)"


def _member_of(tenant: Tenant, name: str, members: Members | None) -> bool:
    """Whether the cluster `name` is the tenant's: listed, or (by labels) a member whose
    labels match; without Karmada's Clusters (an offline plan) a name cannot be judged and
    passes, and the plan says so."""
    if tenant.clusters is not None:
        return name in tenant.clusters
    if members is None or tenant.cluster_selector is None:
        return True
    labels = members.labels.get(name)
    return labels is not None and not members.error and tenant.cluster_selector.matches(labels)


def _cluster_rules(bundle: Bundle, tenant: Tenant, members: Members | None) -> Iterable[str]:
    if not tenant.bounded:
        return
    said = f"tenant {tenant.name} may place only on {tenant.clusters_said()}"
    options = bundle.source.options
    where = join(bundle.source.path, BUNDLE_CONFIG)
    reached: list[tuple[str, _Choice]] = []
    if options.placement is not None:
        reached += [(f"the placement of bundle {bundle.name} ({where} or defaults.placement)",
                     c) for c in _choices(options.placement)]
    for obj in bundle.objects:
        if is_propagation(obj):
            placement = (obj.get("spec") or {}).get("placement")
            reached += [(str(ObjectRef.of(obj)), c)
                        for c in _choices(placement if isinstance(placement, dict) else {})]
    for index, custom in enumerate(options.clusters):
        reached.append((f"clusters[{index}] in {where}",
                        _Choice(custom.clusters, custom.selector, custom.selector is not None)))
    for index, wave in enumerate(options.rollout.waves if options.rollout else ()):
        reached.append((f"rollout.waves[{index}] in {where}",
                        _Choice(wave.clusters, wave.selector, wave.selector is not None)))
    for what, choice in reached:
        why = _outside(tenant, choice, members)
        if why:
            yield f"{what} {why}: {said}"


def unjudged(tenancy: Tenancy | None) -> list[str]:
    """What a plan without Karmada's Clusters cannot check (a warning each)."""
    return [f"tenant {t.name} places only on {t.clusters_said()}: the member clusters its "
            "bundles name are checked against their labels in the loop (or plan "
            "--kubeconfig), not here" for t in (tenancy.by_labels if tenancy else ())]


def is_cluster_wide(obj: Manifest) -> bool:
    """A Karmada object that acts on what it selects in every namespace, and whose reach
    gitgate reads from its selectors (`REACH_READ`; any other cluster-scoped kind is refused
    to a tenant by `object_rules`)."""
    ref = ObjectRef.of(obj)
    return (ref.group, ref.kind) in REACH_READ


def police(bundles: list[Bundle], tenancy: Tenancy | None,
           members: Members | None = None, scopes: ScopeTable | None = None) -> list[Bundle]:
    """`bundles`, with each that breaks its tenant's rules failed (`OutsideTenant`).
    `members`: Karmada's Clusters, for tenants whose clusters are chosen by labels (None: not
    read, so the names their bundles use are not judged). `scopes`: which kinds are
    namespaced (`model.kindscope`; None: the built-in table alone)."""
    if tenancy is None or (not tenancy.tenants and tenancy.outside == PLATFORM):
        return bundles
    owner = {b.name: _owner(b, tenancy) for b in bundles}
    out = []
    for bundle in bundles:
        why = [] if bundle.failed else _broken(bundle, tenancy, owner, members,
                                               scopes or ScopeTable())
        if not why:
            out.append(bundle)
            continue
        out.append(Bundle(bundle.name, bundle.source, (), tuple(
            Problem(bundle.source.path, line, bundle.source.path, None, Reason.OUTSIDE_TENANT)
            for line in why), bundle.labels))
    return out


def _owner(bundle: Bundle, tenancy: Tenancy) -> str:
    found = tenants_of(bundle.source.path, tenancy)
    return found[0].name if len(found) == 1 else PLATFORM if not found else ""


def _broken(bundle: Bundle, tenancy: Tenancy, owner: dict[str, str],
            members: Members | None, scopes: ScopeTable) -> list[str]:
    found = tenants_of(bundle.source.path, tenancy)
    path = bundle.source.path
    if len(found) > 1:
        return [f"{path} is claimed by tenants {', '.join(t.name for t in found)} "
                "(tenants[].paths): a folder belongs to one tenant, so it is not applied until "
                "gitgate.yaml says which"]
    if not found:
        return [] if tenancy.outside == PLATFORM else [
            f"{path} belongs to no tenant (tenants[].paths) and gitgate.yaml says "
            "`untenanted: refuse`"]
    tenant = found[0]
    why = [line for obj in bundle.objects for line in _object_rules(obj, tenant, scopes)]
    why += list(_cluster_rules(bundle, tenant, members))
    for ref, targets in bundle.acts_on:
        foreign = sorted(t for t in targets if owner.get(t) != tenant.name)
        if foreign:
            why.append(f"{ref} acts on {', '.join(foreign)}, outside tenant {tenant.name}: a "
                       "tenant's policies act only on its own bundles")
    return why
