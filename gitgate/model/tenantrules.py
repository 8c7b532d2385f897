"""What a tenant's folder may write, object by object (pure): its kinds, its namespaces, and
cluster-scoped objects only with `clusterScoped: true`. Whether an object is cluster-scoped
is the scope table's word (`model.kindscope`: the API server's, else Kubernetes' and
Karmada's own), never the object's `namespace` field: a repo CRD or a stray `namespace:`
cannot make a cluster-scoped object look like a tenant's. A kind nobody can place fails
closed for a tenant.

A cluster-scoped object acts beyond any namespace, so even with `clusterScoped: true` a
tenant writes one only where gitgate can read its whole reach from the object itself: its
own Namespaces, and the Karmada kinds of `REACH_READ`, whose selectors and placements
`bundle.tenancy` then holds to the tenant's namespaces and clusters. Any other cluster-scoped
kind (a webhook or interpreter configuration, an admission policy, a CRD, a ClusterRole, a
ClusterTaintPolicy, a Cluster, an APIService, a kind of any other group) fails closed: its
reach is the whole cluster, or is decided by things gitgate cannot see (labels that other
roles aggregate, names that other bindings reference, every request it intercepts)."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from gitgate.model.kindscope import ScopeTable
from gitgate.model.objects import Manifest, ObjectRef
from gitgate.model.tenantspec import PLATFORM, Tenancy, Tenant

# the cluster-scoped kinds whose reach gitgate reads from the object (its selectors, its
# placement): the only cluster-scoped kinds but Namespaces a tenant may write
REACH_READ: frozenset[tuple[str, str]] = frozenset({
    ("policy.karmada.io", "ClusterPropagationPolicy"),
    ("policy.karmada.io", "ClusterOverridePolicy"),
    ("apps.karmada.io", "WorkloadRebalancer"),
    ("config.karmada.io", "ResourceInterpreterCustomization"),
})


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


def kind_allowed(tenant: Tenant, kind: str) -> bool:
    return (any(fnmatchcase(kind, p) for p in tenant.kinds_allow)
            and not any(fnmatchcase(kind, p) for p in tenant.kinds_deny))


def in_namespaces(tenant: Tenant, namespace: str) -> bool:
    return any(fnmatchcase(namespace, p) for p in tenant.namespaces)


def object_rules(obj: Manifest, tenant: Tenant, scopes: ScopeTable) -> Iterable[str]:
    """Why `tenant` may not write `obj` (nothing: it may)."""
    ref = ObjectRef.of(obj)
    kind = kind_name(obj)
    said = f"tenant {tenant.name}"
    if not kind_allowed(tenant, kind):
        yield (f"{ref}: the kind {kind} is not allowed for {said} (kinds.allow "
               f"{list(tenant.kinds_allow)}, kinds.deny {list(tenant.kinds_deny)})")
        return
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    namespaces = ", ".join(tenant.namespaces) or "none"
    if (ref.group, ref.kind) == ("", "Namespace"):
        if not in_namespaces(tenant, ref.name):
            yield f"{ref} is not one of {said}'s namespaces ({namespaces})"
        return
    namespaced = scopes.namespaced(ref.group, ref.kind)
    if namespaced is None:
        yield (f"{ref}: {scopes.unknown_why(ref.group, ref.kind)}; {said} writes only "
               "what is known to be within its rules, so it is not applied")
    elif namespaced:
        if not in_namespaces(tenant, namespace):
            yield (f"{ref} is in namespace {namespace or '(none)'}, outside {said}'s "
                   f"namespaces ({namespaces})")
    elif not tenant.cluster_scoped:
        yield (f"{ref._replace(namespace='')} is cluster-scoped, and {said} may write only "
               "namespaced objects and its own Namespaces (clusterScoped: false; the kind "
               f"{kind} is cluster-scoped {scopes.said_by(ref.group, ref.kind)}, whatever "
               "namespace the object names)")
    elif (ref.group, ref.kind) not in REACH_READ:
        yield (f"{ref._replace(namespace='')} is cluster-scoped, and gitgate cannot prove that "
               f"a {kind} acts only on {said}'s namespaces and clusters: with clusterScoped: "
               "true a tenant writes only its Namespaces, ClusterPropagationPolicies, "
               "ClusterOverridePolicies and WorkloadRebalancers that select within them "
               "(anything else cluster-scoped is the platform's)")


def owner_of(path: str, tenancy: Tenancy | None) -> Tenant | str:
    """The tenant a folder belongs to; PLATFORM for a folder of no tenant when such folders
    are the platform's; "" when no one may write from it (two tenants claim it, or
    `untenanted: refuse`)."""
    if tenancy is None:
        return PLATFORM
    found = tenants_of(path, tenancy)
    if len(found) == 1:
        return found[0]
    return PLATFORM if not found and tenancy.outside == PLATFORM else ""


def rights_problem(obj: Manifest, path: str, tenancy: Tenancy | None,
                   scopes: ScopeTable) -> str | None:
    """Why the folder `path` has no right to write `obj` (None: it has)."""
    owner = owner_of(path, tenancy)
    if owner == PLATFORM:
        return None
    if isinstance(owner, str):
        return f"{path} belongs to no single tenant"
    return next(iter(object_rules(obj, owner, scopes)), None)
