"""What a tenant's bundle may write (pure): the rules of `tenants:` in gitgate.yaml, checked
over rendered bundles before anything is planned. A bundle that breaks one fails with
`OutsideTenant`, naming the object, the tenant and the rule; nothing of it is written, and
what it wrote before is neither changed nor pruned (a failed bundle's usual fate)."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from gitgate.bundle.selectors import is_propagation
from gitgate.errors import Reason
from gitgate.model import Bundle, Manifest, ObjectRef, Problem, join
from gitgate.model.tenantspec import PLATFORM, Tenancy, Tenant

BUNDLE_CONFIG = "bundle.yaml"


def path_matches(path: str, pattern: str) -> bool:
    """`apps/payments/**` covers the folder and everything below; other globs as fnmatch."""
    pattern = pattern.strip("/")
    if pattern.endswith("/**"):
        base = pattern[:-3]
        return fnmatchcase(path, base) or any(
            fnmatchcase(path[:i], base) for i in range(len(path)) if path[i] == "/")
    return fnmatchcase(path, pattern)


def tenants_of(path: str, tenancy: Tenancy) -> list[Tenant]:
    return [t for t in tenancy.tenants if any(path_matches(path, p) for p in t.paths)]


def kind_name(obj: Manifest) -> str:
    """`group/Kind`, or `Kind` alone for the core group (`ConfigMap`)."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind = str(obj.get("kind", ""))
    return f"{group}/{kind}" if group else kind


def _kind_allowed(tenant: Tenant, kind: str) -> bool:
    return (any(fnmatchcase(kind, p) for p in tenant.kinds_allow)
            and not any(fnmatchcase(kind, p) for p in tenant.kinds_deny))


def _in_namespaces(tenant: Tenant, namespace: str) -> bool:
    return any(fnmatchcase(namespace, p) for p in tenant.namespaces)


def _object_rules(obj: Manifest, tenant: Tenant) -> Iterable[str]:
    ref = ObjectRef.of(obj)
    kind = kind_name(obj)
    said = f"tenant {tenant.name}"
    if not _kind_allowed(tenant, kind):
        yield (f"{ref}: the kind {kind} is not allowed for {said} (kinds.allow "
               f"{list(tenant.kinds_allow)}, kinds.deny {list(tenant.kinds_deny)})")
        return
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    if kind == "Namespace":
        if not _in_namespaces(tenant, ref.name):
            yield (f"{ref} is not one of {said}'s namespaces "
                   f"({', '.join(tenant.namespaces) or 'none'})")
    elif namespace:
        if not _in_namespaces(tenant, namespace):
            yield (f"{ref} is in namespace {namespace}, outside {said}'s namespaces "
                   f"({', '.join(tenant.namespaces) or 'none'})")
    elif not tenant.cluster_scoped:
        yield (f"{ref} is cluster-scoped, and {said} may write only namespaced objects and "
               "its own Namespaces (clusterScoped: false)")


def _named_clusters(placement: Manifest | None) -> tuple[list[str], bool]:
    """The member clusters a placement names, and whether it names them all (an affinity
    by labels, or none at all, reaches clusters no list can check)."""
    if not placement:
        return [], True
    affinities = [placement["clusterAffinity"]] if placement.get("clusterAffinity") else []
    affinities += [a for a in placement.get("clusterAffinities") or [] if isinstance(a, dict)]
    if not affinities:
        return [], False
    names: list[str] = []
    complete = True
    for affinity in affinities:
        listed = affinity.get("clusterNames") if isinstance(affinity, dict) else None
        if not listed or affinity.get("labelSelector") or affinity.get("fieldSelector"):
            complete = False
        names += [str(n) for n in listed or []]
    return names, complete


def _cluster_rules(bundle: Bundle, tenant: Tenant) -> Iterable[str]:
    allowed = tenant.clusters
    if allowed is None:
        return
    said = f"tenant {tenant.name} may place only on {', '.join(allowed) or 'no cluster'}"
    options = bundle.source.options
    where = join(bundle.source.path, BUNDLE_CONFIG)
    placements: list[tuple[str, Manifest | None]] = []
    if options.placement is not None:
        placements.append((f"the placement of bundle {bundle.name} ({where} or "
                           "defaults.placement)", options.placement))
    for obj in bundle.objects:
        if is_propagation(obj):
            placements.append((str(ObjectRef.of(obj)), (obj.get("spec") or {}).get("placement")))
    for what, placement in placements:
        names, complete = _named_clusters(placement)
        outside = sorted(set(names) - set(allowed))
        if outside:
            yield f"{what} names {', '.join(outside)}: {said}"
        elif not complete:
            yield (f"{what} does not name its member clusters (clusterAffinity.clusterNames): "
                   f"{said}")
    for index, custom in enumerate(options.clusters, 1):
        outside = sorted(set(custom.clusters) - set(allowed))
        if custom.selector is not None or outside:
            yield (f"clusters[{index}] in {where} "
                   + (f"names {', '.join(outside)}" if outside else "selects clusters by labels")
                   + f": {said}")
    for index, wave in enumerate(options.rollout.waves if options.rollout else (), 1):
        outside = sorted(set(wave.clusters) - set(allowed))
        if wave.selector is not None or outside:
            yield (f"rollout.waves[{index}] in {where} "
                   + (f"names {', '.join(outside)}" if outside else "selects clusters by labels")
                   + f": {said}")


def police(bundles: list[Bundle], tenancy: Tenancy | None) -> list[Bundle]:
    """`bundles`, with each that breaks its tenant's rules failed (`OutsideTenant`)."""
    if tenancy is None or (not tenancy.tenants and tenancy.outside == PLATFORM):
        return bundles
    owner = {b.name: _owner(b, tenancy) for b in bundles}
    out = []
    for bundle in bundles:
        why = [] if bundle.failed else _broken(bundle, tenancy, owner)
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


def _broken(bundle: Bundle, tenancy: Tenancy, owner: dict[str, str]) -> list[str]:
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
    why = [line for obj in bundle.objects for line in _object_rules(obj, tenant)]
    why += list(_cluster_rules(bundle, tenant))
    for ref, targets in bundle.acts_on:
        foreign = sorted(t for t in targets if owner.get(t) != tenant.name)
        if foreign:
            why.append(f"{ref} acts on {', '.join(foreign)}, outside tenant {tenant.name}: a "
                       "tenant's policies act only on its own bundles")
    return why
