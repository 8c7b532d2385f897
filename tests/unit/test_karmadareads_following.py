"""Which bundles the loop reads again after a pass (pure): what the pass changed, what had
not settled, what was never seen; all when the pass's changes can act beyond their bundles."""

from __future__ import annotations

from gitgate.apiserver.changeset import ChangeKind, ChangeSet
from gitgate.apply.transitions import Transition
from gitgate.apply.work import BundleResult, PassResult
from gitgate.bundle.selectors import policy_selects
from gitgate.karmada.bindingstatus import Health
from gitgate.karmada.dispatch import ClusterState, Dispatch, Version
from gitgate.model import ObjectRef
from gitgate.passes.karmadareads import Observation, settled, slim, to_follow

CM = ObjectRef("", "ConfigMap", "shop", "web-config")
OVERRIDE = ObjectRef("policy.karmada.io", "OverridePolicy", "shop", "canary")
OWN_POLICY = ObjectRef("policy.karmada.io", "PropagationPolicy", "shop", "gitgate-web")


def cluster(name: str, health: Health = Health.HEALTHY, *, suspended: bool = False,
            version: Version = Version.CURRENT) -> ClusterState:
    return ClusterState(name, True, True, health, suspended, version)


def result(bundle: str, *changes: tuple[ObjectRef, ChangeKind], failed: bool = False
           ) -> BundleResult:
    changeset = ChangeSet()
    for ref, kind in changes:
        changeset.add(ref, kind)
    out = BundleResult(bundle, "apply", changes=changeset)
    if failed:
        out.fail("ApplyFailed", "refused")
    return out


def test_settled_means_every_unsuspended_cluster_runs_it_current_and_healthy():
    assert settled(Dispatch((cluster("m1"), cluster("m2"))))
    assert settled(Dispatch((cluster("m1"), cluster("m2", Health.UNKNOWN, suspended=True))))
    assert settled(Dispatch())  # placed nowhere, nothing said: nothing more to come
    assert not settled(Dispatch((cluster("m1"), cluster("m2", Health.UNHEALTHY))))
    assert not settled(Dispatch((cluster("m1", version=Version.BEHIND),)))
    assert not settled(Dispatch((cluster("m1"),), message="no policy propagates ConfigMap x"))


def test_a_pass_changes_the_bundles_it_wrote_pruned_failed_or_moved():
    passed = PassResult("r2", [
        result("web", (CM, ChangeKind.CONFIGURED)),
        result("blog", (ObjectRef("", "ConfigMap", "blog", "old"), ChangeKind.DELETED)),
        result("api", failed=True),
        result("quiet", (CM, ChangeKind.UNCHANGED)),
        result("held")],
        transitions=[("held", Transition("Normal", "Held", "Hold", "held: freeze")),
                     ("quiet", Transition("Normal", "Applied", "Apply", "revision r2"))])
    assert passed.changed() == {"web", "blog", "api", "held"}


def test_a_karmada_policy_written_or_deleted_changes_what_it_selects_so_all_are_read():
    for ref, kind in ((OVERRIDE, ChangeKind.CONFIGURED), (OVERRIDE, ChangeKind.DELETED),
                      (OWN_POLICY, ChangeKind.CREATED), (OWN_POLICY, ChangeKind.RECREATED)):
        assert PassResult("r", [result("web", (ref, kind))]).changed() is None
    assert PassResult("r", [result("web", (CM, ChangeKind.CONFIGURED))],
                      dry_run=True).changed() is None


def test_to_follow_reads_the_changed_the_unsettled_and_the_unseen():
    previous = Observation({"web": Dispatch((cluster("m1"),)),
                            "blog": Dispatch((cluster("m1", Health.UNHEALTHY),)),
                            "quiet": Dispatch((cluster("m1"),))})
    bundles = ["web", "blog", "quiet", "new"]
    assert to_follow(previous, {"web"}, bundles) == {"web", "blog", "new"}
    assert to_follow(previous, set(), bundles) == {"blog", "new"}
    assert to_follow(previous, None, bundles) is None  # the pass says: read all
    assert to_follow(None, {"web"}, bundles) is None  # nothing read yet
    assert to_follow(Observation(error="cannot read"), {"web"}, bundles) is None


TEMPLATE = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"tier": "front"},
                         "generation": 4, "resourceVersion": "812", "uid": "u-1",
                         "annotations": {"big": "x" * 4096},
                         "managedFields": [{"manager": "gitgate", "fieldsV1": {}}]},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "web:2"}]}}},
            "status": {"replicas": 3}}


def override_by(selector: dict) -> dict:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
            "metadata": {"name": "o", "namespace": "shop"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            **selector}]}}


def test_a_template_is_kept_slim_with_what_selectors_and_dispatch_read():
    kept = slim(TEMPLATE)
    assert kept == {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "shop",
                                 "labels": {"tier": "front"}, "generation": 4,
                                 "resourceVersion": "812"}}
    assert ObjectRef.of(kept) == ObjectRef.of(TEMPLATE)
    for selector in ({"name": "web"}, {"name": "api"}, {},
                     {"labelSelector": {"matchLabels": {"tier": "front"}}},
                     {"labelSelector": {"matchLabels": {"tier": "back"}}},
                     {"labelSelector": {"matchExpressions": [
                         {"key": "tier", "operator": "In", "values": ["front"]}]}}):
        policy = override_by(selector)
        assert policy_selects(policy, kept) == policy_selects(policy, TEMPLATE), selector


class _Namespace:
    """A Lister of one namespace's ResourceBindings and ConfigMaps (plain data)."""

    def __init__(self, bindings: list[dict], configmaps: list[dict]) -> None:
        self.lists = {"ResourceBinding": bindings, "ConfigMap": configmaps}

    def list_objects(self, api_version, kind, namespace="", label_selector=""):
        return [dict(o) for o in self.lists.get(kind, [])]


def test_a_read_keeps_the_bindings_of_its_own_objects_alone_of_a_shared_namespace():
    """Another replica's (or team's) bundles share the namespace: their bindings come in the
    same list, and are neither parsed nor kept."""
    from gitgate.karmada.dispatch import binding_key
    from gitgate.passes.karmadareads import read_karmada

    ours, theirs = CM, ObjectRef("", "ConfigMap", "shop", "other-config")

    def binding(ref: ObjectRef, clusters: list[str]) -> dict:
        return {"metadata": {"name": binding_key(ref)[1], "namespace": "shop"},
                "spec": {"clusters": [{"name": c} for c in clusters]}}

    def configmap(ref: ObjectRef) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ref.name, "namespace": "shop", "resourceVersion": "7"}}

    namespace = _Namespace([binding(ours, ["m1"]), binding(theirs, ["m2"])],
                           [configmap(ours), configmap(theirs)])
    read = read_karmada(namespace, {ours: "v1"})
    assert set(read.bindings) == {binding_key(ours)}
    assert read.bindings[binding_key(ours)].scheduled_on == ("m1",)
    assert set(read.templates) == {ours}


def test_a_read_keeps_the_cluster_bindings_of_its_own_cluster_scoped_objects_alone():
    """The same for ClusterResourceBindings: one list for the whole cluster, which holds every
    team's cluster-scoped objects."""
    from gitgate.karmada.dispatch import binding_key
    from gitgate.passes.karmadareads import read_karmada

    ours = ObjectRef("rbac.authorization.k8s.io", "ClusterRole", "", "web-reader")
    theirs = ObjectRef("rbac.authorization.k8s.io", "ClusterRole", "", "blog-reader")

    class Cluster:
        def list_objects(self, api_version, kind, namespace="", label_selector=""):
            if kind == "ClusterResourceBinding":
                return [{"metadata": {"name": binding_key(r)[1]},
                         "spec": {"clusters": [{"name": c}]}}
                        for r, c in ((ours, "m1"), (theirs, "m2"))]
            if kind == "ClusterRole":
                return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                         "metadata": {"name": r.name}} for r in (ours, theirs)]
            return []

    read = read_karmada(Cluster(), {ours: "rbac.authorization.k8s.io/v1"})
    assert set(read.bindings) == {binding_key(ours)}
    assert read.bindings[binding_key(ours)].scheduled_on == ("m1",)
    assert set(read.templates) == {ours}
