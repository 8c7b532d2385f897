"""Suspension before templates, as plain data: Karmada's binding names, the widest of two
suspensions, the stage table of a suspended bundle, the policy-first steps and the bounded wait
for Karmada's bindings (a fake reader and a fake clock)."""

from __future__ import annotations

from gitgate.apply import stages
from gitgate.apply.suspension import await_suspension, describe, plan_steps
from gitgate.karmada.binding import (
    binding_name,
    binding_of,
    same_suspension,
    suspension_of,
    widest,
)
from tests.support.objects import cm, deployment

ALL = {"dispatching": True}


def on(*clusters: str) -> dict:
    return {"dispatchingOnClusters": {"clusterNames": list(clusters)}}


def policy(suspension=None, name="gitgate-app", ns="ns") -> dict:
    spec: dict = {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}]}
    if suspension:
        spec["suspension"] = suspension
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


class Reader:
    """Objects by (kind, namespace, name); `script` changes them as reads go by."""

    def __init__(self, objects=None, script=None):
        self.objects = dict(objects or {})
        self.reads: list[tuple[str, str, str]] = []
        self.script = script

    def get(self, api_version, kind, namespace, name):
        self.reads.append((kind, namespace, name))
        if self.script:
            self.script(self)
        return self.objects.get((kind, namespace, name))


def test_binding_names_follow_karmada():
    assert binding_name("Deployment", "Web") == "web-deployment"
    assert binding_name("ClusterRole", "system:viewer") == "system.viewer-clusterrole"
    ref = binding_of(deployment("web"))
    assert (ref.kind, ref.namespace, ref.name) == ("ResourceBinding", "ns", "web-deployment")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "reader"}}
    assert binding_of(role).kind == "ClusterResourceBinding"
    assert binding_of({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}) is None


def test_suspensions_compare_by_meaning_and_widen():
    assert suspension_of({"spec": {"suspension": {"dispatching": False}}}) is None
    assert suspension_of({"spec": {"suspension": {**on("b", "a"), "scheduling": True}}}) == on(
        "a", "b")
    assert same_suspension(on("b", "a"), on("a", "b")) and not same_suspension(on("a"), ALL)
    assert widest(on("member2"), None) == on("member2")
    assert widest(None, None) is None
    assert widest(on("member2"), on("member1")) == on("member1", "member2")
    assert widest(on("member2"), ALL) == ALL


def test_a_suspended_bundle_writes_namespaces_then_policies_then_crds_and_templates():
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "things.example.com"}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "reader"}}
    override = {**policy(), "kind": "OverridePolicy"}
    objects = [deployment("web"), policy(on("m2")), namespace, crd, role, override]
    suspended = stages.by_stage(objects, suspending=True)
    assert [[o["kind"] for o in suspended[s]] for s in stages.STAGES] == [
        ["Namespace"], ["PropagationPolicy"], ["CustomResourceDefinition"], ["ClusterRole"],
        ["Deployment"], ["OverridePolicy"]]
    open_ = stages.by_stage(objects)
    assert [[o["kind"] for o in open_[s]] for s in stages.STAGES] == [
        ["Namespace", "CustomResourceDefinition"], [], [], ["ClusterRole"], ["Deployment"],
        ["OverridePolicy", "PropagationPolicy"]]


def test_steps_suspend_first_and_narrow_only_after_the_templates():
    objects = (deployment("web"), cm("c"), policy(on("member2")))
    fresh = plan_steps(objects, objects, on("member2"), Reader())
    assert fresh.first == on("member2") and fresh.after == ()
    assert [p["spec"]["suspension"] for p in fresh.before] == [on("member2")]
    assert [t["kind"] for t in fresh.templates] == ["Deployment", "ConfigMap"]

    # Git narrows `all` to member2: every cluster stays suspended while templates are written
    live_all = Reader({("PropagationPolicy", "ns", "gitgate-app"): policy(ALL)})
    narrowing = plan_steps(objects, (objects[0],), on("member2"), live_all)
    assert narrowing.first == ALL and narrowing.before == ()
    assert [p["spec"]["suspension"] for p in narrowing.after] == [on("member2")]

    # member1 -> member2: both suspended first, member1 released after the templates
    live_m1 = Reader({("PropagationPolicy", "ns", "gitgate-app"): policy(on("member1"))})
    swap = plan_steps(objects, (objects[2],), on("member2"), live_m1)
    assert swap.first == on("member1", "member2")
    assert [p["spec"]["suspension"] for p in swap.before] == [on("member1", "member2")]
    assert [p["spec"]["suspension"] for p in swap.after] == [on("member2")]

    # unchanged policy whose live copy lost its suspension is written again, first
    drifted = Reader({("PropagationPolicy", "ns", "gitgate-app"): policy(None)})
    again = plan_steps(objects, (objects[0],), on("member2"), drifted)
    assert [p["spec"]["suspension"] for p in again.before] == [on("member2")]


def binding(suspension=None) -> dict:
    return {"spec": {"suspension": suspension} if suspension else {}}


def test_wait_ends_when_every_existing_binding_shows_the_suspension():
    reader = Reader({("ResourceBinding", "ns", "web-deployment"): binding(None)})

    def karmada_catches_up(r: Reader) -> None:
        if len(r.reads) == 3:
            r.objects[("ResourceBinding", "ns", "web-deployment")] = binding(on("member2"))

    reader.script = karmada_catches_up
    clock = iter(range(100))
    result = await_suspension(reader, {"app": (on("member2"), (deployment("web"), cm("new")))},
                              timeout=30, sleep=lambda s: None, clock=lambda: next(clock))
    assert result.lagging == {"app": []}
    # the ConfigMap has no binding yet (safe: Karmada creates it from the suspended policy),
    # and a binding once seen to agree is not read again
    assert reader.reads == [("ResourceBinding", "ns", "web-deployment"),
                            ("ResourceBinding", "ns", "new-configmap"),
                            ("ResourceBinding", "ns", "web-deployment")]


def test_wait_is_bounded_and_names_the_bindings_that_lag():
    reader = Reader({("ResourceBinding", "ns", "web-deployment"): binding(on("member1"))})
    ticks = iter(range(0, 1000, 5))
    slept: list[float] = []
    result = await_suspension(reader, {"app": (on("member2"), (deployment("web"),))},
                              timeout=30, sleep=slept.append, clock=lambda: next(ticks))
    lags = result.lagging["app"]
    assert [str(lag.binding) for lag in lags] == [
        "ResourceBinding ns/web-deployment (of Deployment.apps ns/web)"]
    assert len(slept) == 5  # polled every 5 s of the fake clock until the 30 s deadline
    message = describe(lags, 30)
    assert "within 30s" in message and "web-deployment" in message
    assert "no template of this bundle was written" in message
