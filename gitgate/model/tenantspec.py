"""Tenants of a shared repo (`tenants:` in gitgate.yaml): which folders each team owns and
where their bundles may write. Plain data."""

from __future__ import annotations

from dataclasses import dataclass

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
    cluster_scoped: bool = False  # may it write cluster-scoped objects (Namespaces aside)
    service_account: tuple[str, str] | None = None  # (namespace, name), impersonated


@dataclass(frozen=True)
class Tenancy:
    tenants: tuple[Tenant, ...] = ()
    outside: str = PLATFORM  # what a source outside every tenant is: PLATFORM or REFUSE
