"""The names of the policies gitgate generates: one per bundle and instance on an API server,
the default instance's as they always were, DNS-1123 subdomains of at most 253 characters."""

import pytest

from gitgate.karmada.policy import generated_policies, override_name, policy_name
from gitgate.model import BundleVerdict, ObjectRef, Verdict
from gitgate.model.ownership import name_problem, reserved_problem
from tests.support.objects import bundle, cm

CM = ObjectRef("", "ConfigMap", "shop", "cfg")
PLACEMENT = {"clusterAffinity": {"clusterNames": ["member1"]}}


def test_the_default_instance_keeps_its_names():
    assert policy_name("ns") == policy_name("ns", "default") == "gitgate-ns"
    assert policy_name("shop/carts") == "gitgate-shop.carts"
    assert override_name("shop/carts", CM) == "gitgate-shop.carts.configmap.cfg"


def test_another_instance_names_itself_in_every_generated_policy():
    assert policy_name("ns", "blue") == "gitgate.blue.ns"
    assert override_name("shop/carts", CM, "blue") == "gitgate.blue.shop.carts.configmap.cfg"
    app = bundle("ns", cm("x"), {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "shop"}})
    opened = BundleVerdict("ns", Verdict.APPLY, "0" * 64)
    names = {(p["kind"], p["metadata"]["name"])
             for p in generated_policies(app, PLACEMENT, opened, "blue")}
    assert names == {("ClusterPropagationPolicy", "gitgate.blue.ns"),
                     ("PropagationPolicy", "gitgate.blue.ns")}


@pytest.mark.parametrize(("one", "other"), [
    (("ns", "default"), ("ns", "blue")),  # the same bundle in two instances
    (("a/b", "default"), ("b", "a")),  # a default-instance folder named like an instance
    (("blue/ns", "default"), ("ns", "blue")),
    (("_/a/b", "default"), ("b", "a")),  # a first folder that sanitizes to nothing
    (("b/c", "a"), ("c", "a.b")),  # an instance that is not one DNS label
    (("x", "Blue"), ("x", "blue")),
    (("b" * 300, "default"), ("b" * 299, "default")),  # cut: the hash tells them apart
    (("b" * 300, "blue"), ("b" * 300, "green")),
])
def test_names_differ_between_instances_and_when_cut(one, other):
    assert policy_name(*one) != policy_name(*other)
    assert override_name(one[0], CM, one[1]) != override_name(other[0], CM, other[1])


@pytest.mark.parametrize("instance", ["default", "blue", "Prod.EU_1", "x" * 80])
@pytest.mark.parametrize("name", ["ns", "Shop/Carts_v2", "_/x", "a/-b-/c.", "b" * 300])
def test_names_are_kubernetes_names(name, instance):
    for made in (policy_name(name, instance), override_name(name, CM, instance),
                 override_name(name, ObjectRef("", "ConfigMap", "shop", "y" * 250), instance)):
        assert name_problem("policy.karmada.io", "PropagationPolicy", made) is None, made
        assert name_problem("", "ConfigMap", made) is None, made  # the subdomain rule
        assert made.startswith(("gitgate-", "gitgate."))


def test_a_repo_cannot_name_its_policy_like_a_generated_one():
    for name in ("gitgate-ns", "gitgate.blue.ns"):
        policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                  "metadata": {"name": name, "namespace": "shop"}, "spec": {}}
        assert "gitgate generates" in (reserved_problem(policy) or "")
