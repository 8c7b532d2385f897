from gitgate.karmada.policy import generated_policies, policy_name, with_suspension
from gitgate.model import BUNDLE_LABEL, BundleVerdict, Verdict
from tests.support.objects import bundle, cm, deployment

PLACEMENT = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}


def verdict(kind=Verdict.APPLY, clusters=None):
    return BundleVerdict("b", kind, "0" * 64, suspend_clusters=clusters)


def test_one_policy_per_namespace_and_one_cluster_policy():
    app = bundle("shop/carts", deployment("carts"), cm("cfg"), cm("x", ns="other"), NS)
    policies = generated_policies(app, PLACEMENT, verdict())
    kinds = [(p["kind"], p["metadata"].get("namespace")) for p in policies]
    assert kinds == [("ClusterPropagationPolicy", None), ("PropagationPolicy", "ns"),
                     ("PropagationPolicy", "other")]
    ns_policy = policies[1]
    assert ns_policy["metadata"]["name"] == "gitgate-shop.carts"
    assert ns_policy["metadata"]["labels"] == {BUNDLE_LABEL: "shop_carts"}
    assert ns_policy["spec"]["propagateDeps"] is True
    assert ns_policy["spec"]["placement"] == PLACEMENT
    assert ns_policy["spec"]["resourceSelectors"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "namespace": "ns"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "carts", "namespace": "ns"}]
    assert policies[0]["spec"]["resourceSelectors"] == [
        {"apiVersion": "v1", "kind": "Namespace", "name": "other"}]
    assert all("suspension" not in p["spec"] for p in policies)


def test_no_placement_or_own_policies_means_none_generated():
    own = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
           "metadata": {"name": "mine", "namespace": "ns"},
           "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]}}
    assert generated_policies(bundle("a", cm("x")), None, verdict()) == []
    assert generated_policies(bundle("a", cm("x"), own), PLACEMENT, verdict()) == []


def test_suspension_on_generated_and_own_policies():
    app = bundle("a", cm("x"))
    everywhere = generated_policies(app, PLACEMENT, verdict(Verdict.SUSPENDED))
    assert everywhere[0]["spec"]["suspension"] == {"dispatching": True}
    some = generated_policies(app, PLACEMENT, verdict(Verdict.SUSPENDED, ("member2",)))
    assert some[0]["spec"]["suspension"] == {
        "dispatchingOnClusters": {"clusterNames": ["member2"]}}
    own = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
           "metadata": {"name": "mine"},
           "spec": {"resourceSelectors": [], "suspension": {"dispatching": True}}}
    (changed, untouched) = with_suspension((own, cm("x")), verdict(Verdict.SUSPENDED, ("m3",)))
    assert changed["spec"]["suspension"] == {"dispatchingOnClusters": {"clusterNames": ["m3"]}}
    assert untouched == cm("x") and own["spec"]["suspension"] == {"dispatching": True}


def test_policy_names_are_dns_names():
    assert policy_name("Shop/Carts_v2") == "gitgate-shop.carts-v2"
