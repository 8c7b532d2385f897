"""Karmada's policies committed in the repo: Karmada's selector rules, overrides that belong to
the bundles they select (held with them, in their digest), propagation policies that may not
take over another bundle, and generated policies that never select Karmada's own objects."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gitgate.bundle.group import bundle_digest
from gitgate.bundle.policies import link_policies
from gitgate.bundle.selectors import (
    is_control_plane,
    label_selector_matches,
    policy_selects,
    resource_matches,
)
from gitgate.errors import Reason
from gitgate.gate.evaluate import evaluate
from gitgate.karmada.policy import PRIORITY, generated_policies
from gitgate.model import Action, BundleVerdict, Gate, ObjectRef, ReasonKind, Verdict
from gitgate.plan import bundle_plan
from tests.support.objects import bundle, cm, deployment

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)
PLACEMENT = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}


def override(name, *selectors, ns="ns", kind="OverridePolicy", image="web:2"):
    meta = {"name": name, **({"namespace": ns} if kind == "OverridePolicy" else {})}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": meta,
            "spec": {"resourceSelectors": list(selectors), "overrideRules": [{
                "targetCluster": {"clusterNames": ["member2"]},
                "overriders": {"plaintext": [{"path": "/spec/template/spec/containers/0/image",
                                              "operator": "replace", "value": image}]}}]}}


def propagation(name, *selectors, ns="ns", kind="PropagationPolicy", priority=None):
    meta = {"name": name, **({"namespace": ns} if kind == "PropagationPolicy" else {})}
    spec = {"resourceSelectors": list(selectors), "placement": PLACEMENT}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": meta,
            "spec": spec}


def select(kind="Deployment", api="apps/v1", **more):
    return {"apiVersion": api, "kind": kind, **more}


def hold(name, *patterns):
    return Gate(name, f"gates/{name}.yaml", f"because {name}", Action.HOLD, tuple(patterns),
                {}, (), None, (), ())


# -- Karmada's selector rules ---------------------------------------------------------------

WEB = deployment("web", labels={"app": "web", "tier": "front"})


@pytest.mark.parametrize(("selector", "matches"), [
    (select(), True),  # no name, no labelSelector: every object of that kind
    (select(api="apps/v1beta1"), False),  # apiVersion must be equal, not only the group
    (select(kind="StatefulSet"), False),
    (select(namespace="ns"), True),
    (select(namespace="other"), False),
    (select(name="web"), True),
    (select(name="api"), False),
    # a name wins over a label selector: the labels are not consulted
    (select(name="web", labelSelector={"matchLabels": {"app": "nope"}}), True),
    (select(name="api", labelSelector={"matchLabels": {"app": "web"}}), False),
    (select(labelSelector={"matchLabels": {"app": "web"}}), True),
    (select(labelSelector={"matchLabels": {"app": "api"}}), False),
    (select(labelSelector={}), True),  # an empty selector selects everything
    (select(labelSelector={"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["front", "edge"]}]}), True),
    (select(labelSelector={"matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["front"]}]}), False),
    (select(labelSelector={"matchExpressions": [
        {"key": "team", "operator": "NotIn", "values": ["x"]}]}), True),  # absent: not in
    (select(labelSelector={"matchExpressions": [{"key": "app", "operator": "Exists"}]}), True),
    (select(labelSelector={"matchExpressions": [
        {"key": "app", "operator": "DoesNotExist"}]}), False),
    (select(labelSelector={"matchExpressions": [{"key": "app", "operator": "Bogus"}]}), False),
    (select(labelSelector="app=web"), False),  # malformed: selects nothing
    ("not a selector", False),
])
def test_one_resource_selector_follows_karmadas_rules(selector, matches):
    assert resource_matches(WEB, selector) is matches


def test_label_selector_combines_labels_and_expressions():
    selector = {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}
    assert not label_selector_matches(selector, {"app": "web", "tier": "front"})
    assert label_selector_matches(selector, {"app": "web", "tier": "back"})


def test_a_namespaced_policy_acts_only_in_its_namespace_a_cluster_one_everywhere():
    elsewhere = deployment("web", ns="other")
    assert policy_selects(override("o", select()), WEB)
    assert not policy_selects(override("o", select()), elsewhere)
    # even when its selector names another namespace
    assert not policy_selects(override("o", select(namespace="other"), ns="ns"), elsewhere)
    cluster_wide = override("o", select(), kind="ClusterOverridePolicy")
    assert policy_selects(cluster_wide, WEB) and policy_selects(cluster_wide, elsewhere)
    scoped = override("o", select(namespace="other"), kind="ClusterOverridePolicy")
    assert policy_selects(scoped, elsewhere) and not policy_selects(scoped, WEB)


def test_an_override_without_selectors_acts_on_everything_it_reaches():
    assert policy_selects(override("o"), WEB)
    assert policy_selects(override("o"), cm("c"))
    assert not policy_selects(override("o"), cm("c", ns="other"))
    assert not policy_selects(propagation("p"), WEB)  # a propagation policy needs selectors


@pytest.mark.parametrize("api", ["policy.karmada.io/v1alpha1", "config.karmada.io/v1alpha1",
                                 "autoscaling.karmada.io/v1alpha1", "karmada.io/v1"])
def test_karmadas_own_objects_are_control_plane_and_never_selected(api):
    obj = {"apiVersion": api, "kind": "Anything", "metadata": {"name": "x", "namespace": "ns"}}
    assert is_control_plane(obj)
    assert not policy_selects(override("o", select(api=api, kind="Anything")), obj)
    assert not is_control_plane({"apiVersion": "notkarmada.io/v1", "kind": "X"})
    assert not is_control_plane(WEB)


# -- overrides belong to the bundles they select ---------------------------------------------

def shop(override_image="web:2"):
    web = bundle("web", deployment("web"), cm("web-config"))
    api = bundle("api", deployment("api"))
    platform = bundle("platform", override("web-tag", select(name="web"), image=override_image),
                      cm("platform-config"))
    return link_policies([api, platform, web])


def by_name(bundles):
    return {b.name: b for b in bundles}


def test_an_override_in_another_folder_is_linked_to_the_bundle_it_selects():
    bundles = by_name(shop())
    ref = ObjectRef("policy.karmada.io", "OverridePolicy", "ns", "web-tag")
    assert bundles["platform"].acts_on == ((ref, ("web",)),)
    assert bundles["web"].overridden_by == (ref,)
    assert bundles["api"].overridden_by == () and bundles["api"].acts_on == ()


def test_the_digest_of_a_bundle_covers_the_overrides_acting_on_it():
    before, after = by_name(shop("web:2")), by_name(shop("web:3"))
    web = before["web"]
    assert web.digest != bundle_digest(web.objects, web.source.options)
    assert after["web"].digest != web.digest  # an approval of the old digest does not cover it
    assert after["api"].digest == before["api"].digest  # a bundle it does not select: same


def test_an_override_in_the_bundle_it_selects_is_part_of_that_bundle_only():
    web = bundle("web", deployment("web"), override("own", select(name="web")))
    [linked] = link_policies([web])
    assert linked.acts_on == () and linked.overridden_by == ()


def test_a_cluster_override_over_every_configmap_belongs_to_every_bundle_with_one():
    cop = override("all-cms", select(kind="ConfigMap", api="v1"), kind="ClusterOverridePolicy")
    bundles = by_name(link_policies([
        bundle("web", deployment("web"), cm("web-config")),
        bundle("other", cm("elsewhere", ns="other")),
        bundle("api", deployment("api")),
        bundle("platform", cop)]))
    assert bundles["platform"].acts_on[0][1] == ("other", "web")


def test_a_hold_on_a_selected_bundle_holds_the_override_and_says_with_what():
    bundles = shop()
    verdicts = evaluate(bundles, [hold("freeze", "web")], [], NOW)
    platform = verdicts["platform"]
    assert platform.verdict is Verdict.APPLY  # the rest of the platform bundle goes on
    ref = ObjectRef("policy.karmada.io", "OverridePolicy", "ns", "web-tag")
    assert platform.held_objects == (ref,)
    [why] = [r for r in platform.reasons if r.kind is ReasonKind.DEPENDENCY]
    assert why.reason.startswith("held with web:") and "because freeze" in why.reason
    assert why.target == ref and why.file == "gates/freeze.yaml"
    assert verdicts["api"].held_objects == ()
    plan = bundle_plan(by_name(bundles)["platform"], platform)
    assert plan.desired  # the plan still lists it; the engine keeps held objects unwritten


def test_an_override_of_an_open_bundle_is_not_held():
    verdicts = evaluate(shop(), [hold("freeze", "api")], [], NOW)
    assert verdicts["platform"].held_objects == ()


# -- propagation policies in the repo -------------------------------------------------------

def test_a_propagation_policy_selecting_another_bundles_objects_fails_its_source():
    thief = propagation("grab", select(name="web"), priority=1000)
    bundles = by_name(link_policies([
        bundle("web", deployment("web")),
        bundle("thief", thief, deployment("thief"))]))
    assert not bundles["web"].failed
    [problem] = bundles["thief"].problems
    assert problem.reason is Reason.POLICY_TAKEOVER
    assert "take over web" in problem.message and "Deployment.apps ns/web" in problem.message
    assert bundles["thief"].objects == ()


@pytest.mark.parametrize("thief", [
    propagation("by-label", select(labelSelector={"matchLabels": {"app": "web"}})),
    propagation("by-kind", select()),
    propagation("cluster", select(namespace="ns"), kind="ClusterPropagationPolicy"),
])
def test_every_way_of_selecting_another_bundle_is_a_takeover(thief):
    bundles = by_name(link_policies([
        bundle("web", deployment("web", labels={"app": "web"})),
        bundle("thief", thief)]))
    assert bundles["thief"].failed and not bundles["web"].failed


def test_a_propagation_policy_of_its_own_objects_is_fine():
    own = propagation("mine", select(name="web"))
    bundles = by_name(link_policies([bundle("web", deployment("web"), own),
                                     bundle("api", deployment("api"))]))
    assert not bundles["web"].failed and bundles["web"].acts_on == ()


def test_every_bundle_of_the_thiefs_source_fails():
    from tests.support.objects import source
    src = source("apps/split", name="split")
    thief = bundle("split/a", propagation("grab", select(name="web")), src=src)
    sibling = bundle("split/b", deployment("b"), src=src)
    bundles = by_name(link_policies([thief, sibling, bundle("web", deployment("web"))]))
    assert bundles["split/a"].failed and bundles["split/b"].failed


# -- generated policies ---------------------------------------------------------------------

def test_generated_policies_never_select_karmadas_objects_and_cannot_be_outranked():
    web = bundle("web", deployment("web"), override("own", select(name="web")),
                 {"apiVersion": "config.karmada.io/v1alpha1",
                  "kind": "ResourceInterpreterCustomization", "metadata": {"name": "ric"}})
    verdict = BundleVerdict("web", Verdict.APPLY, "d")
    [policy] = generated_policies(web, PLACEMENT, verdict)
    assert [s["kind"] for s in policy["spec"]["resourceSelectors"]] == ["Deployment"]
    assert policy["spec"]["priority"] == PRIORITY == 2**31 - 1
    only_karmada = bundle("platform", override("o", select(name="web")))
    assert generated_policies(only_karmada, PLACEMENT, verdict) == []


# -- other Karmada objects that act on named objects ----------------------------------------

FHPA = {"apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"}, "minReplicas": 1, "maxReplicas": 9}}
REBALANCER = {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
              "metadata": {"name": "move"},
              "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                      "name": "web", "namespace": "ns"}]}}
INTERPRETER = {"apiVersion": "config.karmada.io/v1alpha1",
               "kind": "ResourceInterpreterCustomization", "metadata": {"name": "deploy"},
               "spec": {"target": {"apiVersion": "apps/v1", "kind": "Deployment"},
                        "customizations": {}}}


@pytest.mark.parametrize(("actor", "acted_on"), [
    (FHPA, ("web",)),
    ({**FHPA, "metadata": {"name": "web", "namespace": "other"}}, ()),  # its own namespace
    ({**FHPA, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment"}}},
     ()),  # no name: names nothing
    ({**FHPA, "kind": "CronFederatedHPA"}, ("web",)),
    (REBALANCER, ("web",)),
    (INTERPRETER, ("api", "web")),  # every Deployment: how Karmada reads the kind
    ({**INTERPRETER, "spec": "broken"}, ()),
])
def test_scalers_rebalancers_and_interpreters_belong_to_what_they_act_on(actor, acted_on):
    bundles = by_name(link_policies([
        bundle("web", deployment("web")), bundle("api", deployment("api")),
        bundle("platform", actor)]))
    found = bundles["platform"].acts_on
    assert (found[0][1] if found else ()) == acted_on
    verdicts = evaluate(list(bundles.values()), [hold("freeze", "web")], [], NOW)
    held = bool(verdicts["platform"].held_objects)
    assert held is ("web" in acted_on)


def test_against_a_failed_bundles_inventory_unknown_labels_count_as_a_match():
    from gitgate.apply.overrides import held_with_failed
    by_label = override("o", select(labelSelector={"matchLabels": {"app": "web"}}))
    by_name = override("o2", select(name="api"))
    entries = {"web": [("apps/v1", ObjectRef("apps", "Deployment", "ns", "web"))]}
    waiting = held_with_failed([by_label, by_name, cm("plain")], entries)
    assert waiting == {ObjectRef("policy.karmada.io", "OverridePolicy", "ns", "o"): ["web"]}
    elsewhere = {"web": [("apps/v1", ObjectRef("apps", "Deployment", "other", "web"))]}
    assert held_with_failed([by_label], elsewhere) == {}  # its namespace rules still hold
