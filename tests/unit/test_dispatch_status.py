"""The pure per-cluster status of a bundle, from plain bindings and templates shaped as a real
Karmada writes them (observed with ../shared/karmada-harness)."""

from __future__ import annotations

from gitgate.karmada.bindingstatus import BindingStatus, parse_binding
from gitgate.karmada.dispatch import Health, Version, binding_key, dispatch_of
from gitgate.model import ObjectRef

WEB = ObjectRef("apps", "Deployment", "shop", "web")
CFG = ObjectRef("", "ConfigMap", "shop", "web-config")
ROLE = ObjectRef("rbac.authorization.k8s.io", "ClusterRole", "", "web-reader")
NS = ObjectRef("", "Namespace", "", "shop")
POLICY = ObjectRef("policy.karmada.io", "PropagationPolicy", "shop", "gitgate-web")


def template(ref: ObjectRef, generation: int | None = None, rv: str = "100") -> dict:
    meta = {"name": ref.name, "resourceVersion": rv}
    if ref.namespace:
        meta["namespace"] = ref.namespace
    if generation is not None:
        meta["generation"] = generation
    api = f"{ref.group}/v1" if ref.group else "v1"
    return {"apiVersion": api, "kind": ref.kind, "metadata": meta}


def item(cluster: str, *, applied=True, health="Healthy", runs: int | None = None,
         message: str = "") -> dict:
    out: dict = {"clusterName": cluster, "applied": applied}
    if health:
        out["health"] = health
    if runs is not None:
        out["status"] = {"generation": 1, "resourceTemplateGeneration": runs}
    if message:
        out["appliedMessage"] = message
    return out


def binding(ref: ObjectRef, items: list[dict], *, clusters=("member1", "member2"),
            suspension=None, scheduled="True", seen_rv: str = "100",
            schedule_message="Binding has been scheduled successfully.") -> BindingStatus:
    spec: dict = {"clusters": [{"name": c} for c in clusters],
                  "resource": {"kind": ref.kind, "name": ref.name, "resourceVersion": seen_rv}}
    if suspension:
        spec["suspension"] = suspension
    return parse_binding({
        "metadata": {"name": binding_key(ref)[1], "namespace": ref.namespace},
        "spec": spec,
        "status": {"aggregatedStatus": items, "conditions": [
            {"type": "Scheduled", "status": scheduled, "message": schedule_message},
            {"type": "FullyApplied", "status": "True"}]}})


def by_key(*bindings: tuple[ObjectRef, BindingStatus]) -> dict:
    return {binding_key(ref): b for ref, b in bindings}


def cluster(dispatch, name):
    return next(c for c in dispatch.clusters if c.name == name)


def test_healthy_and_current_everywhere_is_ready():
    d = dispatch_of([WEB, CFG, NS, POLICY], by_key(
        (WEB, binding(WEB, [item("member1", runs=3), item("member2", runs=3)])),
        (CFG, binding(CFG, [item("member1", health="Healthy"), item("member2")]))),
        {WEB: template(WEB, 3), CFG: template(CFG)})
    assert [c.name for c in d.clusters] == ["member1", "member2"]
    for state in d.clusters:
        assert state.ready and not state.suspended
        assert (state.health, state.version, state.message) == (Health.HEALTHY,
                                                                 Version.CURRENT, "")
    assert d.waiting_on() == [] and d.health is Health.HEALTHY and d.message == ""


def test_not_scheduled_names_the_object_and_karmadas_reason():
    d = dispatch_of([WEB], by_key((WEB, binding(
        WEB, [], clusters=(), scheduled="False",
        schedule_message="0/2 clusters are available: 2 cluster(s) did not match."))),
        {WEB: template(WEB, 1)})
    assert d.clusters == ()  # placed nowhere
    d = dispatch_of([WEB, CFG], by_key(
        (WEB, binding(WEB, [item("member1", runs=1)], clusters=("member1",))),
        (CFG, binding(CFG, [], clusters=(), scheduled="False", schedule_message="no fit"))),
        {WEB: template(WEB, 1), CFG: template(CFG)})
    m1 = cluster(d, "member1")
    assert not m1.scheduled and not m1.applied and not m1.ready
    assert m1.message == "ConfigMap shop/web-config: not scheduled on member1: no fit"


def test_an_object_without_a_binding_is_named():
    d = dispatch_of([WEB, CFG], by_key((WEB, binding(WEB, [item("member1", runs=2),
                                                           item("member2", runs=2)]))),
                    {WEB: template(WEB, 2), CFG: template(CFG)})
    assert "ConfigMap shop/web-config has no ResourceBinding" in d.message
    assert all(not c.scheduled and c.message == d.message for c in d.clusters)


def test_applied_with_an_error_message():
    d = dispatch_of([CFG], by_key((CFG, binding(CFG, [
        item("member1"), item("member2", applied=False, health="",
                              message='namespaces "shop" not found')]))),
        {CFG: template(CFG)})
    m2 = cluster(d, "member2")
    assert (m2.applied, m2.health, m2.version) == (False, Health.UNKNOWN, Version.UNKNOWN)
    assert m2.apply_failed and not cluster(d, "member1").apply_failed
    assert m2.message == 'ConfigMap shop/web-config on member2: namespaces "shop" not found'
    assert cluster(d, "member1").ready


def test_unhealthy_is_the_worst_and_named():
    d = dispatch_of([CFG, WEB], by_key(
        (WEB, binding(WEB, [item("member1", health="Unhealthy", runs=4),
                            item("member2", health="Unknown", runs=4)])),
        (CFG, binding(CFG, [item("member1"), item("member2")]))),
        {WEB: template(WEB, 4), CFG: template(CFG)})
    m1, m2 = cluster(d, "member1"), cluster(d, "member2")
    assert m1.health is Health.UNHEALTHY and m1.version is Version.CURRENT and not m1.ready
    assert m1.message == "Deployment.apps shop/web is Unhealthy on member1"
    assert m2.health is Health.UNKNOWN
    assert d.health is Health.UNHEALTHY
    assert [c.name for c in d.waiting_on()] == ["member1", "member2"]


def test_behind_on_the_suspended_cluster_current_on_the_other():
    m2_only = {"dispatchingOnClusters": {"clusterNames": ["member2"]}}
    d = dispatch_of([WEB, CFG], by_key(
        (WEB, binding(WEB, [item("member1", runs=3), item("member2", health="Unhealthy",
                                                            runs=2)], suspension=m2_only)),
        (CFG, binding(CFG, [item("member1"), item("member2")], suspension=m2_only,
                      seen_rv="200"))),
        {WEB: template(WEB, 3), CFG: template(CFG, rv="200")})
    m1, m2 = cluster(d, "member1"), cluster(d, "member2")
    assert (m1.suspended, m1.version, m1.ready) == (False, Version.CURRENT, True)
    assert (m2.suspended, m2.version) == (True, Version.BEHIND)
    assert d.waiting_on() == []  # suspended clusters are reported, not waited for


def test_a_configmap_on_a_suspended_cluster_is_unknown_and_a_stale_binding_is_not_current():
    d = dispatch_of([CFG], by_key((CFG, binding(
        CFG, [item("member1"), item("member2")], suspension={"dispatching": True},
        seen_rv="150"))), {CFG: template(CFG, rv="150")})
    assert {c.version for c in d.clusters} == {Version.UNKNOWN}
    assert all(c.suspended for c in d.clusters)
    # the binding has not seen the template's latest write yet
    d = dispatch_of([CFG], by_key((CFG, binding(CFG, [item("member1"), item("member2")],
                                                seen_rv="150"))),
                    {CFG: template(CFG, rv="151")})
    assert {c.version for c in d.clusters} == {Version.UNKNOWN}
    assert not any(c.ready for c in d.clusters)


def test_a_deployment_whose_member_status_is_not_collected_yet_is_not_current():
    d = dispatch_of([WEB], by_key((WEB, binding(WEB, [item("member1", health="Unhealthy"),
                                                      item("member2", health="Unhealthy")]))),
                    {WEB: template(WEB, 2)})
    assert {c.version for c in d.clusters} == {Version.UNKNOWN}


def test_never_dispatched_to_a_suspended_cluster():
    d = dispatch_of([WEB], by_key((WEB, binding(WEB, [item("member1", runs=1)],
                                                suspension={"dispatchingOnClusters": {
                                                    "clusterNames": ["member2"]}}))),
                    {WEB: template(WEB, 1)})
    m2 = cluster(d, "member2")
    assert (m2.suspended, m2.applied) == (True, False)
    assert m2.message == "Deployment.apps shop/web on member2: never dispatched (dispatch is " \
                         "suspended)"


def test_cluster_scoped_objects_use_their_cluster_binding():
    role = binding(ROLE, [item("member1"), item("member2", health="Unhealthy")],
                   clusters=("member1", "member2"))
    d = dispatch_of([ROLE], {("", "web-reader-clusterrole"): role}, {ROLE: template(ROLE)})
    assert cluster(d, "member1").ready
    assert cluster(d, "member2").message == (
        "ClusterRole.rbac.authorization.k8s.io web-reader is Unhealthy on member2")


def test_namespaces_and_policies_need_no_binding():
    d = dispatch_of([NS, POLICY], {}, {})
    assert d.clusters == () and d.message == ""
