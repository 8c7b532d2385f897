"""Tenants of a shared repo (`tenants:` in gitgate.yaml): which folders each team owns and
where their bundles may write. Plain data."""

from __future__ import annotations

from dataclasses import dataclass

from gitgate.model.rolloutspec import ClusterSelector

PLATFORM = "platform"  # a source outside every tenant belongs to the platform (admin)
REFUSE = "refuse"  # ... or is refused


@dataclass(frozen=True)
class Tenant:
    name: str
    paths: tuple[str, ...]  # folder globs: `apps/payments/**` (the folder and all below)
    namespaces: tuple[str, ...] = ()  # namespace globs its objects may live in
    clusters: tuple[str, ...] | None = None  # member clusters it may place on (None: any)
    kinds_allow: tuple[str, ...] = ("*",)  # `group/Kind` globs (`Kind` for the core group)
    kinds_deny: tuple[str, ...] = ()
    cluster_scoped: bool = False  # may it write cluster-scoped objects of `REACH_READ` kinds
    service_account: tuple[str, str] | None = None  # (namespace, name), impersonated
    cluster_selector: ClusterSelector | None = None  # its clusters by labels, not by name

    @property
    def bounded(self) -> bool:
        """Whether its placements are held to a set of clusters at all."""
        return self.clusters is not None or self.cluster_selector is not None

    def clusters_said(self) -> str:
        if self.cluster_selector is not None:
            return f"clusters labelled {self.cluster_selector.text()}"
        return ", ".join(self.clusters or ()) or "no cluster"


@dataclass(frozen=True)
class Tenancy:
    tenants: tuple[Tenant, ...] = ()
    outside: str = PLATFORM  # what a source outside every tenant is: PLATFORM or REFUSE

    @property
    def by_labels(self) -> tuple[Tenant, ...]:
        """The tenants whose clusters are chosen by labels (they need Karmada's Clusters)."""
        return tuple(t for t in self.tenants if t.cluster_selector is not None)
