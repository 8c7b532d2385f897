"""Where Karmada records what it will dispatch: one ResourceBinding (namespaced template) or
ClusterResourceBinding (cluster-scoped template) per resource template, named as Karmada names
it, whose `spec.suspension` is copied from the claiming policy. Pure: names, comparisons and the
widest of two suspensions."""

from __future__ import annotations

from dataclasses import dataclass

from gitgate.model import Manifest, ObjectRef

WORK_API_VERSION = "work.karmada.io/v1alpha2"
_NEVER_BOUND = {("", "Namespace")}  # Karmada's namespace controller dispatches namespaces itself


@dataclass(frozen=True)
class BindingRef:
    kind: str  # ResourceBinding or ClusterResourceBinding
    namespace: str
    name: str
    template: ObjectRef

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where} (of {self.template})"


def binding_name(kind: str, name: str) -> str:
    """Karmada's `names.GenerateBindingName`: `<name>-<kind>` lower-cased, ':' written '.'."""
    return f"{name.replace(':', '.')}-{kind}".lower()


def binding_of(template: Manifest) -> BindingRef | None:
    """The binding Karmada keeps for a resource template; None for objects it never binds
    through a policy (Namespaces, which its namespace controller propagates on its own)."""
    ref = ObjectRef.of(template)
    if (ref.group, ref.kind) in _NEVER_BOUND:
        return None
    kind = "ResourceBinding" if ref.namespace else "ClusterResourceBinding"
    return BindingRef(kind, ref.namespace, binding_name(ref.kind, ref.name), ref)


def suspension_of(obj: Manifest | None) -> Manifest | None:
    """`spec.suspension` of a policy or binding, reduced to the dispatching part (a binding
    may carry `scheduling` as well, which gitgate does not set)."""
    suspension = ((obj or {}).get("spec") or {}).get("suspension") or {}
    if suspension.get("dispatching"):
        return {"dispatching": True}
    clusters = (suspension.get("dispatchingOnClusters") or {}).get("clusterNames") or []
    if clusters:
        return {"dispatchingOnClusters": {"clusterNames": sorted(set(clusters))}}
    return None


def same_suspension(a: Manifest | None, b: Manifest | None) -> bool:
    return suspension_of({"spec": {"suspension": a}}) == suspension_of(
        {"spec": {"suspension": b}})


def widest(a: Manifest | None, b: Manifest | None) -> Manifest | None:
    """A suspension that stops dispatching wherever `a` or `b` does: used while a bundle moves
    from one suspension to another, so that no cluster is released before its templates are
    written."""
    a, b = (suspension_of({"spec": {"suspension": s}}) for s in (a, b))
    if a is None or b is None:
        return a or b
    if a.get("dispatching") or b.get("dispatching"):
        return {"dispatching": True}
    clusters = {*a["dispatchingOnClusters"]["clusterNames"],
                *b["dispatchingOnClusters"]["clusterNames"]}
    return {"dispatchingOnClusters": {"clusterNames": sorted(clusters)}}
