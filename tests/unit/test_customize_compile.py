"""Per-cluster customizations compiled into Karmada overriders: the diff (add, replace and
remove only), the compile step's refusals, the generated OverridePolicies, the digest, and
what a member runs (`render --cluster`)."""

from __future__ import annotations

import copy

import pytest

from gitgate.bundle.group import group_source
from gitgate.karmada.effective import cluster_matches, member_view
from gitgate.karmada.policy import generated_overrides, override_name
from gitgate.model import BundleOptions, ObjectRef, RenderedSource, Source, SourceKind
from gitgate.model.clusterspec import Customization
from gitgate.model.rolloutspec import ClusterSelector
from gitgate.render.customize import apply_operations, compile_overrides, json_diff, pointer
from tests.support.objects import cm, deployment

M2 = Customization(clusters=("member2",), patches=({"patch": []},))
EU = Customization(selector=ClusterSelector((("region", "eu"),)), values={"x": 1})


def changed(obj, **edits):
    out = copy.deepcopy(obj)
    for path, value in edits.items():
        node = out
        *parents, last = path.split(".")
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return out


@pytest.mark.parametrize(("before", "after", "ops"), [
    ({"a": 1}, {"a": 1}, []),
    ({"a": 1}, {"a": 2}, [{"path": "/a", "operator": "replace", "value": 2}]),
    ({"a": 1}, {}, [{"path": "/a", "operator": "remove"}]),
    ({}, {"b": {"c": 1}}, [{"path": "/b", "operator": "add", "value": {"c": 1}}]),
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}},
     [{"path": "/a/c", "operator": "replace", "value": 3}]),
    # lists of other items change whole: an index-wise patch would hit the wrong item later
    ({"l": [1, 2]}, {"l": [1, 2, 3]}, [{"path": "/l", "operator": "replace",
                                        "value": [1, 2, 3]}]),
    # lists of the same named items are walked item by item
    ({"c": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]},
     {"c": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:2"}]},
     [{"path": "/c/1/image", "operator": "replace", "value": "y:2"}]),
    ({"c": [{"name": "a"}]}, {"c": [{"name": "b"}]},
     [{"path": "/c", "operator": "replace", "value": [{"name": "b"}]}]),
    # JSON pointer escaping of '/' and '~' in keys (annotations, labels)
    ({"m": {"a/b~c": "1"}}, {"m": {"a/b~c": "2"}},
     [{"path": "/m/a~1b~0c", "operator": "replace", "value": "2"}]),
    ({"a": 1}, {"a": "1"}, [{"path": "/a", "operator": "replace", "value": "1"}]),
])
def test_the_diff_uses_only_what_karmadas_plaintext_overrider_takes(before, after, ops):
    assert json_diff(before, after) == ops
    assert apply_operations(before, ops) == after  # and applies back exactly


def test_pointer_escapes():
    assert pointer(["metadata", "annotations", "example.com/x~y"]) == \
        "/metadata/annotations/example.com~1x~0y"


def test_compile_gives_one_rule_per_customization_that_changes_an_object():
    web, config = deployment("web"), cm("web-config", data={"mode": "green"})
    five = changed(web, **{"spec.replicas": 5})
    blue = changed(config, **{"data.mode": "blue"})
    overrides, problems = compile_overrides((web, config), [
        (M2, (five, config)), (EU, (changed(web, **{"spec.replicas": 3}), blue))])
    assert problems == []
    by_ref = {o.ref: o for o in overrides}
    rules = by_ref[ObjectRef("apps", "Deployment", "ns", "web")].rules
    assert [(r.customization, r.target_cluster) for r in rules] == [
        (1, {"clusterNames": ["member2"]}),
        (2, {"labelSelector": {"matchLabels": {"region": "eu"}}})]
    assert rules[0].operations == ({"path": "/spec/replicas", "operator": "add", "value": 5},)
    [only] = by_ref[ObjectRef("", "ConfigMap", "ns", "web-config")].rules
    assert only.customization == 2  # member2 leaves the ConfigMap as it is: no rule


def test_a_customization_may_not_add_or_drop_objects():
    web, config = deployment("web"), cm("web-config")
    _, problems = compile_overrides((web, config), [(M2, (web, config, cm("extra")))])
    assert len(problems) == 1 and "ConfigMap ns/extra" in problems[0]
    assert "clusters[0] (clusters member2)" in problems[0]
    _, problems = compile_overrides((web, config), [(M2, (web,))])
    assert "does not render ConfigMap ns/web-config" in problems[0]


def test_a_secret_is_never_customized_and_its_value_never_named():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
              "data": {"password": "czNjcjN0"}}
    other = changed(secret, **{"data.password": "b3RoZXI="})
    overrides, problems = compile_overrides((secret,), [(M2, (other,))])
    assert overrides == () and "Secret ns/s" in problems[0]
    assert "b3RoZXI=" not in problems[0] and "czNjcjN0" not in problems[0]


def rendered_source(objects, overrides):
    options = BundleOptions(namespace="ns", placement={"clusterAffinity": {
        "clusterNames": ["member1", "member2"]}}, clusters=(M2,))
    source = Source("apps/web", SourceKind.RAW, options, "web")
    return RenderedSource(source, tuple(objects), overrides=overrides)


def test_generated_override_policies_select_one_object_each_and_the_digest_covers_them():
    web, config = deployment("web"), cm("web-config")
    five = changed(web, **{"spec.replicas": 5})
    overrides, _ = compile_overrides((web, config), [(M2, (five, config))])
    [bundle] = group_source(rendered_source([web, config], overrides))
    [plain] = group_source(rendered_source([web, config], ()))
    assert bundle.digest != plain.digest and bundle.objects == plain.objects
    [policy] = generated_overrides(bundle)
    assert policy["kind"] == "OverridePolicy"
    assert policy["metadata"] == {"name": "gitgate-web.deployment.web", "namespace": "ns",
                                  "labels": {"gitgate.io/bundle": "web"}}
    assert policy["spec"]["resourceSelectors"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "ns"}]
    [named] = generated_overrides(bundle, "blue")  # another instance's, on one API server
    assert named["metadata"]["name"] == "gitgate.blue.web.deployment.web"
    assert policy["spec"]["overrideRules"] == [{
        "targetCluster": {"clusterNames": ["member2"]},
        "overriders": {"plaintext": [{"path": "/spec/replicas", "operator": "add",
                                      "value": 5}]}}]
    six, _ = compile_overrides((web, config), [(M2, (changed(web, **{"spec.replicas": 6}),
                                                    config))])
    [other] = group_source(rendered_source([web, config], six))
    assert other.digest != bundle.digest  # an approval of 5 replicas does not cover 6


def test_override_names_stay_names():
    long = override_name("b" * 60, ObjectRef("apps", "Deployment", "ns", "x" * 250))
    assert len(long) <= 253 and long.startswith("gitgate-")
    assert override_name("shop/carts", ObjectRef("", "ConfigMap", "ns", "cfg")) == \
        "gitgate-shop.carts.configmap.cfg"


@pytest.mark.parametrize(("target", "labels", "matches"), [
    (None, None, True),
    ({"clusterNames": ["member2"]}, None, True),
    ({"clusterNames": ["member1"]}, None, False),
    ({"exclude": ["member2"]}, None, False),
    ({"labelSelector": {"matchLabels": {"region": "eu"}}}, None, None),  # not known here
    ({"labelSelector": {"matchLabels": {"region": "eu"}}}, {"region": "eu"}, True),
    ({"labelSelector": {"matchLabels": {"region": "eu"}}}, {"region": "us"}, False),
    # provider, region, zone: fields of the Cluster object, not known offline
    ({"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In",
                                              "values": ["eu"]}]}}, {}, None),
])
def test_target_clusters_follow_karmada(target, labels, matches):
    assert cluster_matches(target, "member2", labels) is matches


def test_a_member_runs_the_customization_and_the_repos_overrides_in_karmadas_order():
    web, config = deployment("web"), cm("web-config")
    five = changed(web, **{"spec.replicas": 5})
    overrides, _ = compile_overrides((web, config), [(M2, (five, config))])
    [bundle] = group_source(rendered_source([web, config], overrides))
    repo_policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
                   "metadata": {"name": "zz-later", "namespace": "ns"},
                   "spec": {"resourceSelectors": [{"apiVersion": "apps/v1",
                                                   "kind": "Deployment"}],
                            "overrideRules": [{"overriders": {"plaintext": [
                                {"path": "/spec/replicas", "operator": "add",
                                 "value": 7}], "imageOverrider": []}}]}}
    [platform] = group_source(RenderedSource(
        Source("platform", SourceKind.RAW, BundleOptions(namespace="ns"), "platform"),
        (repo_policy,)))
    view = member_view([bundle, platform], "member2")
    [member_web] = [o for o in view.objects["web"] if o["kind"] == "Deployment"]
    # by kind only (implicit priority 1) goes before by name (3): the name-selecting
    # generated policy is applied last and wins
    assert member_web["spec"]["replicas"] == 5
    assert any("imageOverrider not shown" in n for n in view.notes)
    assert "platform" not in view.objects  # only Karmada's own objects: nothing runs
    member1 = member_view([bundle, platform], "member1")
    [on_member1] = [o for o in member1.objects["web"] if o["kind"] == "Deployment"]
    assert on_member1["spec"]["replicas"] == 7  # only the repo policy (no target) acts there
    broken = copy.deepcopy(repo_policy)
    broken["spec"]["overrideRules"][0]["overriders"]["plaintext"][0]["operator"] = "replace"
    [platform] = group_source(RenderedSource(platform.source, (broken,)))
    failing = member_view([bundle, platform], "member1")
    assert any("cannot be applied to Deployment.apps ns/web" in n for n in failing.notes)


# -- whether a member got the current overrides (the Work's annotations) -------------------

def work_with(*items, cluster_items=()):
    import json as _json
    return {"metadata": {"annotations": {
        "policy.karmada.io/applied-overrides": _json.dumps(list(items)),
        **({"policy.karmada.io/applied-cluster-overrides": _json.dumps(list(cluster_items))}
           if cluster_items else {})}}}


def image_override(value, clusters=("member2",), name="web-image"):
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": "web"}],
                     "overrideRules": [{"targetCluster": {"clusterNames": list(clusters)},
                                        "overriders": {"plaintext": [
                                            {"path": "/spec/template/spec/containers/0/image",
                                             "operator": "replace", "value": value}],
                                            "imageOverrider": []}}]}}


def test_a_member_whose_work_lacks_the_current_override_is_behind():
    from gitgate.karmada.overridden import lag
    web = deployment("web")
    policy = image_override("nginx:2.1")
    # what Karmada wrote (Go omits the empty imageOverrider)
    current = work_with({"policyName": "web-image", "overriders": {"plaintext": [
        {"path": "/spec/template/spec/containers/0/image", "operator": "replace",
         "value": "nginx:2.1"}]}})
    old = work_with({"policyName": "web-image", "overriders": {"plaintext": [
        {"path": "/spec/template/spec/containers/0/image", "operator": "replace",
         "value": "nginx:2.0"}]}})
    assert lag(web, [policy], "member2", {}, current) is None
    why = lag(web, [policy], "member2", {}, old)
    assert why is not None and "web-image" in why and "member2" in why
    # member1 is not targeted: its Work has no overrides, and needs none
    assert lag(web, [policy], "member1", {}, work_with()) is None
    assert lag(web, [policy], "member1", {}, old) is not None  # an override it should not have
    # a new policy not yet on the Work, and a removed one still there
    assert lag(web, [policy, image_override("x", name="extra")], "member2", {}, current)
    assert lag(web, [], "member2", {}, current) is not None
    # unreadable annotations, or a target by labels not known: cannot be told
    broken = {"metadata": {"annotations": {"policy.karmada.io/applied-overrides": "{"}}}
    assert lag(web, [policy], "member2", {}, broken) is None
    by_label = image_override("x")
    by_label["spec"]["overrideRules"][0]["targetCluster"] = {
        "labelSelector": {"matchLabels": {"region": "eu"}}}
    assert lag(web, [by_label], "member2", None, old) is None


@pytest.mark.parametrize(("previous", "written", "suspended", "behind"), [
    ((), ("member2",), ("member2",), ("member2",)),  # changed while member2 is suspended
    ((), None, ("member2",), ()),  # suspended, nothing changed: not behind
    (("member2",), None, ("member2",), ("member2",)),  # still suspended: still behind
    (("member2",), None, None, ()),  # resumed: it gets the change
    (("member1", "member2"), None, ("member2",), ("member2",)),  # member1 resumed
    ((), ("*",), ("*",), ("*",)),  # a full suspension
    (("*",), None, ("member2",), ("member2",)),  # narrowed to member2
    (("member2",), ("member1",), ("*",), ("member1", "member2")),
])
def test_which_clusters_run_old_overrides_after_a_pass(previous, written, suspended, behind):
    from gitgate.apply.overrides import still_behind
    assert still_behind(previous, written, suspended) == behind


def test_the_inventory_keeps_the_clusters_behind_and_reads_old_ones_as_none():
    from gitgate.apply.inventory import Inventory
    from gitgate.apply.legacyinventory import from_configmap, to_configmap
    written = to_configmap(Inventory("web", overrides_behind=("member2",)))
    assert from_configmap(written).overrides_behind == ("member2",)
    assert from_configmap(to_configmap(Inventory("web"))).overrides_behind == ()
    written["data"]["overridesBehind"] = "not json"
    assert from_configmap(written).overrides_behind == ("*",)  # unreadable: all (fail closed)
