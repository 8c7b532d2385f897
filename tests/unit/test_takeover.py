"""A template taken over by a suspended bundle: the giving bundle's live policy drops the
selectors naming it, and nothing else of it changes (`apply.takeover`)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from gitgate.apply.inventory import Entry, Inventory
from gitgate.apply.takeover import Giver, let_go
from gitgate.apply.work import ApplyOptions
from gitgate.model import ObjectRef

PP = ("policy.karmada.io/v1alpha1", "PropagationPolicy", "shop", "gitgate-web")
EXTRA = ObjectRef("", "ConfigMap", "shop", "extra")
NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)


def policy(*names: str, label_selector: bool = False) -> dict:
    selectors = [{"apiVersion": "v1", "kind": "ConfigMap", "name": n, "namespace": "shop"}
                 for n in names]
    if label_selector:
        selectors.append({"apiVersion": "v1", "kind": "ConfigMap",
                          "labelSelector": {"matchLabels": {"app": "web"}}})
    return {"apiVersion": PP[0], "kind": PP[1], "metadata": {
        "name": PP[3], "namespace": "shop", "uid": "u1", "resourceVersion": "7",
        "managedFields": [{"manager": "gitgate"}],
        "labels": {"gitgate.io/bundle": "web", "propagationpolicy.karmada.io/permanent-id": "p"},
        "annotations": {"note": "kept"}},
        "spec": {"resourceSelectors": selectors, "suspension": {"dispatching": True},
                 "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}},
        "status": {"x": 1}}


class Cluster:
    def __init__(self, live: dict | None):
        self.live, self.applied, self.deleted = live, [], []

    def get(self, api_version, kind, namespace, name):
        return copy.deepcopy(self.live) if (api_version, kind, namespace, name) == PP else None

    def apply(self, obj, **_):
        self.applied.append(obj)

    def delete(self, *args):
        self.deleted.append(args)
        return True


def giving(prunes: bool = True) -> dict[str, Giver]:
    return {"web": Giver(Inventory("web", (Entry(*PP, "h"), Entry("v1", "ConfigMap", "shop",
                                                                   "extra", "h"))), prunes)}


def test_only_the_selector_naming_the_taken_template_goes():
    cluster = Cluster(policy("config", "extra", label_selector=True))
    let_go(giving(), {"web": {EXTRA: "v1"}}, cluster, ApplyOptions(NOW))
    [sent] = cluster.applied
    assert [s.get("name") for s in sent["spec"]["resourceSelectors"]] == ["config", None]
    assert sent["spec"]["suspension"] == {"dispatching": True}  # placement, suspension stay
    assert sent["spec"]["placement"] == policy()["spec"]["placement"]
    assert sent["metadata"]["labels"] == {"gitgate.io/bundle": "web"}  # not Karmada's own
    assert sent["metadata"]["annotations"] == {"note": "kept"}
    assert not {"uid", "resourceVersion", "managedFields"} & set(sent["metadata"])
    assert "status" not in sent and not cluster.deleted


def test_a_policy_left_selecting_nothing_is_deleted():
    cluster = Cluster(policy("extra"))
    let_go(giving(), {"web": {EXTRA: "v1"}}, cluster, ApplyOptions(NOW))
    assert cluster.deleted == [PP] and not cluster.applied


def test_a_policy_of_a_bundle_that_prunes_nothing_now_is_never_deleted():
    """A giver kept back this pass (held, waiting, or behind the mass-prune brake) keeps a
    policy left selecting nothing, and the template with it: the taking bundle's wait fails
    rather than a policy its bundle does not prune vanishing."""
    cluster = Cluster(policy("extra"))
    let_go(giving(prunes=False), {"web": {EXTRA: "v1"}}, cluster, ApplyOptions(NOW))
    assert not cluster.deleted and not cluster.applied


def test_a_policy_not_naming_it_or_a_dry_run_is_left_alone():
    cluster = Cluster(policy("config", label_selector=True))
    let_go(giving(), {"web": {EXTRA: "v1"}}, cluster, ApplyOptions(NOW))
    assert not cluster.applied and not cluster.deleted
    cluster = Cluster(policy("config", "extra"))
    let_go(giving(), {"web": {EXTRA: "v1"}}, cluster, ApplyOptions(NOW, dry_run=True))
    assert not cluster.applied and not cluster.deleted
