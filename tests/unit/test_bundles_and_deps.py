"""Bundling by application on a realistic raw-YAML app (the example shop: 10 services,
ConfigMaps, Secrets, Services, an Ingress), and dependency holds across bundles."""

from datetime import UTC, datetime

import pytest

from gitgate.bundle import deps
from gitgate.bundle.group import bundle_digest, group_all, split_by_app
from gitgate.gate.evaluate import evaluate
from gitgate.model import BUNDLE_LABEL, Gate, ObjectRef, ReasonKind, Verdict
from gitgate.render.pipeline import render_repo
from tests.conftest import EXAMPLES
from tests.support.objects import cm, deployment

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)
SERVICES = ["carts", "catalogue", "frontend", "orders", "payment", "queue-master", "rabbitmq",
            "session-db", "shipping", "user"]


@pytest.fixture(scope="module")
def shop_bundles():
    result = render_repo(EXAMPLES, None, only=lambda s: s.path == "apps/shop")
    assert result.problems == ()
    return {b.name: b for b in group_all(result.rendered)}


def names(bundle):
    return sorted(f"{r.kind}/{r.name}" for r in bundle.refs)


def test_each_service_is_its_own_bundle_with_what_it_uses(shop_bundles):
    assert sorted(shop_bundles) == ["shop"] + [f"shop/{s}" for s in SERVICES]
    assert names(shop_bundles["shop/carts"]) == [
        "ConfigMap/carts-config", "Deployment/carts", "Secret/carts-credentials", "Service/carts"]
    assert names(shop_bundles["shop/frontend"]) == [
        "ConfigMap/frontend-config", "Deployment/frontend", "Ingress/shop", "Service/frontend"]
    assert names(shop_bundles["shop"]) == ["ConfigMap/shop-common", "ServiceAccount/shop"]
    for bundle in shop_bundles.values():
        assert {o["metadata"]["labels"][BUNDLE_LABEL] for o in bundle.objects} == {
            bundle.name.replace("/", "_")}


def test_used_refs_cover_volumes_projected_env_pull_secrets_and_service_account():
    pod = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "j"}, "spec": {
        "jobTemplate": {"spec": {"template": {"spec": {
            "serviceAccountName": "runner",
            "imagePullSecrets": [{"name": "pull"}],
            "volumes": [{"name": "a", "configMap": {"name": "vol-cm"}},
                        {"name": "b", "secret": {"secretName": "vol-secret"}},
                        {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                        {"name": "d", "projected": {"sources": [
                            {"configMap": {"name": "proj-cm"}}, {"secret": {"name": "proj-s"}}]}}],
            "initContainers": [{"name": "i", "env": [
                {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}}]}],
            "containers": [{"name": "c", "env": [
                {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "env-s", "key": "k"}}}]}],
        }}}}}}
    assert deps.used_refs(pod) == {
        ("ServiceAccount", "runner"), ("Secret", "pull"), ("ConfigMap", "vol-cm"),
        ("Secret", "vol-secret"), ("PersistentVolumeClaim", "data"), ("ConfigMap", "proj-cm"),
        ("Secret", "proj-s"), ("ConfigMap", "env-cm"), ("Secret", "env-s")}


def test_custom_workload_with_pod_template_is_a_root_and_hpa_pdb_follow():
    rollout = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
               "metadata": {"name": "web", "namespace": "ns"},
               "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "w", "image": "i"}]}}}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "ns"},
           "spec": {"scaleTargetRef": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                       "name": "web"}}}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "web", "namespace": "ns"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}}}
    other = cm("unrelated")
    assignment = split_by_app("base", [rollout, hpa, pdb, other])
    assert {r.kind: n for r, n in assignment.items()} == {
        "Rollout": "base/web", "HorizontalPodAutoscaler": "base/web",
        "PodDisruptionBudget": "base/web", "ConfigMap": "base"}


def test_label_moves_an_object_to_another_bundle_of_its_source():
    from gitgate.model import RenderedSource
    from tests.support.objects import source
    moved = cm("extra", labels={BUNDLE_LABEL: "apps-x_special"})
    (a, b) = group_all([RenderedSource(source("apps/x"), (cm("stay"), moved))])
    assert (a.name, b.name) == ("apps-x", "apps-x/special")
    assert names(b) == ["ConfigMap/extra"]


def test_a_label_naming_another_bundle_never_moves_an_object_there():
    from gitgate.model import RenderedSource
    from tests.support.objects import source
    forged = cm("extra", labels={BUNDLE_LABEL: "shop"})
    (only,) = group_all([RenderedSource(source("apps/x"), (cm("stay"), forged))])
    assert only.name == "apps-x" and names(only) == ["ConfigMap/extra", "ConfigMap/stay"]


def test_digest_ignores_order_and_changes_with_content():
    one, two = cm("a", data={"k": "1"}), cm("b")
    assert bundle_digest([one, two]) == bundle_digest([two, one])
    assert bundle_digest([one, two]) != bundle_digest([cm("a", data={"k": "2"}), two])


def test_paused_workload_holds_a_shared_configmap_in_another_bundle(shop_bundles):
    bundles = list(shop_bundles.values())
    pause_carts = Gate("carts-debug", "gates/carts.yaml", "INC-9 carts crash loop",
                       bundles=("shop/carts",))
    verdicts = evaluate(bundles, [pause_carts], [], NOW)
    assert verdicts["shop/carts"].verdict is Verdict.HELD
    base = verdicts["shop"]
    assert base.verdict is Verdict.APPLY
    assert base.held_objects == (ObjectRef("", "ConfigMap", "shop", "shop-common"),
                                 ObjectRef("", "ServiceAccount", "shop", "shop"))
    (cm_reason, sa_reason) = sorted(base.reasons, key=lambda r: str(r.target))
    assert cm_reason.kind is ReasonKind.DEPENDENCY and cm_reason.gate == "carts-debug"
    assert "Deployment.apps shop/carts" in cm_reason.reason and "INC-9" in cm_reason.reason
    assert verdicts["shop/orders"].verdict is Verdict.APPLY
    assert verdicts["shop/orders"].held_objects == ()


def test_no_dependency_hold_without_a_held_workload():
    from tests.support.objects import bundle
    shared = bundle("shared", cm("common"))
    app = bundle("app", deployment("web", configmaps=["common"]))
    verdicts = evaluate([shared, app], [], [], NOW)
    assert verdicts["shared"].held_objects == ()
