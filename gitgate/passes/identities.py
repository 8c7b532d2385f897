"""Each tenant's objects go to the API server as that tenant (`serviceAccount` in gitgate.yaml's
`tenants`): every get, apply and delete of an object of a tenant's bundle is sent with
`Impersonate-User: system:serviceaccount:NS:NAME`, so Karmada's own RBAC has the last word.
gitgate's own state (inventories, leases) and the lists it reads to observe Karmada go with
its own identity, which needs only `impersonate` on those accounts beyond that."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gitgate.apiserver.ports import ClusterPort, Delegating, create
from gitgate.apply.inventory import Inventory
from gitgate.bundle.tenancy import tenants_of
from gitgate.errors import ConfigError
from gitgate.model import FIELD_MANAGER, Manifest, ObjectRef
from gitgate.model.tenantspec import Tenancy
from gitgate.plan import Plan


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


class AsTenants(Delegating):
    """A ClusterPort that sends each object's requests as the tenant whose bundle owns it
    (`owners`: object -> user), and everything else as gitgate."""

    def __init__(self, own: ClusterPort, owners: Mapping[ObjectRef, str]):
        impersonate = getattr(own, "impersonating", None)
        if impersonate is None:
            raise ConfigError("tenants with a serviceAccount need a cluster client that can "
                              "impersonate (the API server's)")
        super().__init__(own)
        self.owners = dict(owners)
        self._as = {user: impersonate(user) for user in set(owners.values())}

    def for_ref(self, ref: ObjectRef) -> ClusterPort:
        """The client the requests about `ref` go through: its tenant's, else gitgate's."""
        user = self.owners.get(ref)
        return self._as[user] if user is not None else self.own


    @staticmethod
    def _ref(api_version: str, kind: str, namespace: str, name: str) -> ObjectRef:
        return ObjectRef(api_version.rpartition("/")[0], kind, namespace, name)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Manifest | None:
        return self.for_ref(self._ref(api_version, kind, namespace, name)).get(
            api_version, kind, namespace, name)

    def apply(self, obj: Manifest, *, dry_run: bool = False, force: bool = False,
              manager: str = FIELD_MANAGER, subresource: str = "") -> Any:
        return self.for_ref(ObjectRef.of(obj)).apply(obj, dry_run=dry_run, force=force,
                                                  manager=manager, subresource=subresource)

    def create(self, obj: Manifest) -> None:
        create(self.for_ref(ObjectRef.of(obj)), obj)

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        return self.for_ref(self._ref(api_version, kind, namespace, name)).delete(
            api_version, kind, namespace, name)


def as_tenants(cluster: ClusterPort, plan: Plan, inventories: Mapping[str, Inventory],
               tenancy: Tenancy) -> ClusterPort:
    """`cluster`, with the objects of every bundle whose tenant names a serviceAccount sent
    as that account: what the bundle writes now and what it wrote before (its prunes)."""
    owners: dict[ObjectRef, str] = {}
    planned = set()
    for item in plan.bundles:
        planned.add(item.bundle.name)
        user = _user_of(item.bundle.source.path, tenancy)
        if user is None:
            continue
        for obj in (*item.desired, *item.policies):
            owners[ObjectRef.of(obj)] = user
        previous = inventories.get(item.bundle.name)
        for entry in previous.entries if previous is not None else ():
            owners.setdefault(entry.ref, user)
    for name, inventory in inventories.items():  # bundles that left Git: their prunes too
        gone_user = _user_of(inventory.source, tenancy) if name not in planned else None
        if gone_user is not None:
            for entry in inventory.entries:
                owners.setdefault(entry.ref, gone_user)
    return AsTenants(cluster, owners) if owners else cluster


def as_recorded_tenants(cluster: ClusterPort, inventories: Iterable[Inventory],
                        tenancy: Tenancy) -> ClusterPort:
    """`cluster`, with what the records say each tenant's bundle wrote sent as that tenant
    (the suspension written before rendering, when only the records are known)."""
    owners: dict[ObjectRef, str] = {}
    for inventory in inventories:
        user = _user_of(inventory.source, tenancy)
        if user is not None:
            for entry in inventory.entries:
                owners.setdefault(entry.ref, user)
    return AsTenants(cluster, owners) if owners else cluster


def _user_of(folder: str, tenancy: Tenancy) -> str | None:
    found = tenants_of(folder, tenancy) if folder else []
    account = found[0].service_account if len(found) == 1 else None
    return service_account_user(*account) if account is not None else None
