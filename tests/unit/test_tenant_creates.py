"""A create through the tenants' identities (`passes.identities.AsTenants`) goes as the
tenant that owns the object, as its apply does; anything else (gitgate's own events) as
gitgate. Over a recording stand-in for the API server's client: which identity sent what."""

from __future__ import annotations

from gitgate.apiserver.ports import create
from gitgate.model import ObjectRef
from gitgate.passes.identities import AsTenants


class Recording:
    def __init__(self, user: str = "gitgate", sent: list | None = None):
        self.user, self.sent = user, sent if sent is not None else []

    def impersonating(self, user: str) -> Recording:
        return Recording(user, self.sent)

    def create(self, obj: dict) -> bool:
        self.sent.append(("create", self.user, obj["metadata"]["name"]))
        return True

    def apply(self, obj: dict, **_: object) -> None:
        self.sent.append(("apply", self.user, obj["metadata"]["name"]))


def cm(name: str, namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}}


def test_a_create_goes_as_the_owning_tenant_and_gitgates_own_as_gitgate():
    server = Recording()
    tenant = "system:serviceaccount:team-a:deployer"
    cluster = AsTenants(server, {ObjectRef("", "ConfigMap", "team-a", "web"): tenant})
    create(cluster, cm("web", "team-a"))
    create(cluster, cm("bundle.0123456789ab", "gitgate-system"))
    assert server.sent == [("create", tenant, "web"),
                           ("create", "gitgate", "bundle.0123456789ab")]
