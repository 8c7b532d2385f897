"""A tenant's bundles write only where gitgate.yaml's `tenants` lets them (issue 27, item 1):
the rules over plain data. Each case is one way a team's folder could act beyond what it owns;
every one fails only the bundle that breaks the rule, naming the object, the tenant and the
rule, and leaves the other bundles alone."""

from __future__ import annotations

import pytest

from gitgate.bundle.tenancy import implies, path_matches, police, selector_of, unjudged
from gitgate.errors import Reason
from gitgate.model import Bundle, BundleOptions, ObjectRef, RolloutSpec, Source, SourceKind
from gitgate.model.claims import arbitrate
from gitgate.model.clusterspec import Customization
from gitgate.model.kindscope import ScopeTable
from gitgate.model.rolloutspec import ClusterSelector, Members, Requirement, Wave
from gitgate.model.tenantspec import REFUSE, Tenancy, Tenant
from gitgate.render.post import crd_scopes, is_namespaced

PLACED = {"clusterAffinity": {"clusterNames": ["member1"]}}
PAY = Tenant("payments", ("apps/payments/**",), ("payments", "payments-*"), ("member1",),
             kinds_deny=("rbac.authorization.k8s.io/ClusterRole*",))
TENANCY = Tenancy((PAY,))


def obj(kind: str, name: str, namespace: str = "", api: str = "v1") -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def bundle(name: str, path: str, *objects: dict, **options) -> Bundle:
    options.setdefault("placement", PLACED)
    return Bundle(name, Source(path, SourceKind.RAW, BundleOptions(**options), name), objects)


def broken(*bundles: Bundle, tenancy: Tenancy = TENANCY,
           members: Members | None = None) -> dict[str, list[str]]:
    """The bundles that fail, with their messages; every failure is OutsideTenant."""
    out = {}
    for b in police(list(bundles), tenancy, members):
        if b.failed:
            assert {p.reason for p in b.problems} == {Reason.OUTSIDE_TENANT}
            assert b.objects == ()  # nothing of it is written
            out[b.name] = [p.message for p in b.problems]
    return out


GOOD = bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
              obj("Deployment", "api", "payments-eu", "apps/v1"), obj("Namespace", "payments"))


def test_a_tenant_within_its_rules_and_the_platform_are_untouched():
    platform = bundle("infra", "platform/rbac",
                      obj("ClusterRoleBinding", "admin", api="rbac.authorization.k8s.io/v1"))
    assert broken(GOOD, platform) == {}


@pytest.mark.parametrize(("culprit", "words"), [
    (obj("ConfigMap", "c", "kube-system"), "is in namespace kube-system, outside tenant payments"),
    (obj("Secret", "s", "billing"), "is in namespace billing"),
    (obj("Namespace", "billing"), "Namespace billing is not one of tenant payments's namespaces"),
    (obj("StorageClass", "fast", api="storage.k8s.io/v1"),
     "is cluster-scoped, and tenant payments may write only namespaced objects"),
    (obj("ClusterRoleBinding", "me-admin", api="rbac.authorization.k8s.io/v1"),
     "the kind rbac.authorization.k8s.io/ClusterRoleBinding is not allowed"),
    (obj("CustomResourceDefinition", "x.example.com", api="apiextensions.k8s.io/v1"),
     "is cluster-scoped"),
    (obj("ClusterOverridePolicy", "all", api="policy.karmada.io/v1alpha1"), "is cluster-scoped"),
    (obj("ClusterRole", "reader", api="rbac.authorization.k8s.io/v1"),
     "the kind rbac.authorization.k8s.io/ClusterRole is not allowed for tenant payments"),
])
def test_an_object_outside_the_tenant_fails_its_bundle_by_name(culprit, words):
    found = broken(bundle("pay", "apps/payments/api", obj("ConfigMap", "ok", "payments"),
                          culprit), GOOD)
    assert list(found) == ["pay"]
    assert any(words in line and str(ObjectRef.of(culprit)) in line for line in found["pay"])


def test_an_allow_list_limits_the_kinds():
    narrow = Tenant("t", ("t/**",), ("t",), kinds_allow=("ConfigMap", "apps/*"))
    found = broken(bundle("t", "t", obj("ConfigMap", "c", "t"),
                          obj("Deployment", "d", "t", "apps/v1"), obj("Secret", "s", "t")),
                   tenancy=Tenancy((narrow,)))
    assert found == {"t": ["Secret t/s: the kind Secret is not allowed for tenant t (kinds.allow "
                           "['ConfigMap', 'apps/*'], kinds.deny [])"]}


WIDE = Tenant("ops", ("ops/**",), ("ops",), ("member1",), cluster_scoped=True)


def within(kind: str, api: str = "policy.karmada.io/v1alpha1", **spec) -> dict:
    return {**obj(kind, "mine", api=api), "spec": spec}


def test_a_cluster_scoped_tenant_writes_what_gitgate_can_hold_to_it():
    """With `clusterScoped: true`: its Namespaces, and the Karmada objects whose reach
    gitgate reads from their selectors, when those select within its namespaces."""
    own = [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ops"}]
    assert broken(bundle("ops", "ops", obj("Namespace", "ops"),
                         within("ClusterPropagationPolicy", resourceSelectors=own,
                                placement=PLACED),
                         within("ClusterOverridePolicy", resourceSelectors=own),
                         within("WorkloadRebalancer", "apps.karmada.io/v1alpha1", workloads=[
                             {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
                              "namespace": "ops"}])),
                  tenancy=Tenancy((WIDE,))) == {}


@pytest.mark.parametrize("culprit", [
    obj("ResourceInterpreterWebhookConfiguration", "all", api="config.karmada.io/v1alpha1"),
    obj("ClusterTaintPolicy", "evict", api="policy.karmada.io/v1alpha1"),
    obj("Cluster", "member1", api="cluster.karmada.io/v1alpha1"),
    obj("Remedy", "r", api="remedy.karmada.io/v1alpha1"),
    obj("ResourceRegistry", "r", api="search.karmada.io/v1alpha1"),
    obj("MutatingWebhookConfiguration", "m", api="admissionregistration.k8s.io/v1"),
    obj("ValidatingAdmissionPolicy", "v", api="admissionregistration.k8s.io/v1"),
    obj("CustomResourceDefinition", "widgets.example.com", api="apiextensions.k8s.io/v1"),
    obj("APIService", "v1.example.com", api="apiregistration.k8s.io/v1"),
    obj("ClusterRole", "r", api="rbac.authorization.k8s.io/v1"),
    obj("ClusterRoleBinding", "r", api="rbac.authorization.k8s.io/v1"),
    obj("FlowSchema", "f", api="flowcontrol.apiserver.k8s.io/v1"),
    obj("PriorityClass", "p", api="scheduling.k8s.io/v1"),
    obj("Widget", "w", api="example.com/v1"),  # a cluster-scoped kind of another group
])
def test_a_cluster_scoped_kind_whose_reach_gitgate_cannot_read_fails_closed(culprit):
    scopes = ScopeTable(((("example.com", "Widget"), False),), served=True)
    found = policed(bundle("ops", "ops", obj("ConfigMap", "c", "ops"), culprit), scopes=scopes,
                    tenancy=Tenancy((WIDE,)))
    assert list(found) == ["ops"]
    assert any(str(ObjectRef.of(culprit)) in line and "gitgate cannot prove" in line
               for line in found["ops"]), found
    platform = bundle("infra", "platform/x", culprit)
    assert policed(platform, scopes=scopes, tenancy=Tenancy((WIDE,))) == {}


def test_a_kind_nobody_knows_fails_a_cluster_scoped_tenant_too():
    gadget = obj("Gadget", "g", "ops", "things.example.com/v1")
    found = policed(bundle("ops", "ops", gadget), scopes=ScopeTable(served=True),
                    tenancy=Tenancy((WIDE,)))
    assert "whether it is namespaced cannot be told" in found["ops"][0]


@pytest.mark.parametrize(("options", "words"), [
    ({"placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}},
     "names member2: tenant payments may place only on member1"),
    ({"placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}},
     "selects clusters by labels: tenant payments may place only on member1"),
    ({"placement": {"clusterAffinities": [{"affinityName": "a", "clusterNames": ["member1"]},
                                          {"affinityName": "b", "clusterNames": ["member3"]}]}},
     "names member3"),
    ({"placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}},
     "does not name its member clusters"),
    ({"clusters": (Customization(("member2",), values={"a": 1}),)},
     "clusters[0] in apps/payments/api/bundle.yaml names member2"),
    ({"clusters": (Customization((), ClusterSelector((("env", "prod"),)), {"a": 1}),)},
     "clusters[0] in apps/payments/api/bundle.yaml selects clusters by labels"),
    ({"rollout": RolloutSpec((Wave(("member1",)), Wave(("member2",))))},
     "rollout.waves[1] in apps/payments/api/bundle.yaml names member2"),
    ({"rollout": RolloutSpec((Wave(selector=ClusterSelector((("ring", "1"),))),))},
     "rollout.waves[0] in apps/payments/api/bundle.yaml selects clusters by labels"),
])
def test_a_placement_beyond_the_tenants_clusters_fails(options, words):
    found = broken(bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
                          **options))
    assert any(words in line for line in found["pay"]), found


@pytest.mark.parametrize("placement", [
    None,  # a policy of the tenant's own with no placement reaches every member cluster
    {},
    {"clusterAffinity": {"exclude": ["member2"]}},
    {"clusterAffinity": {"fieldSelector": {"matchExpressions": [
        {"key": "region", "operator": "In", "values": ["eu"]}]}}},
    {"clusterAffinity": {"labelSelector": {"matchExpressions": [
        {"key": "x", "operator": "Bogus"}]}}},
])
def test_a_policy_that_reaches_every_cluster_fails_a_bounded_tenant(placement):
    policy = {**obj("PropagationPolicy", "all", "payments", "policy.karmada.io/v1alpha1"),
              "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                       **({"placement": placement} if placement is not None else {})}}
    found = broken(bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
                          policy))
    assert "PropagationPolicy.policy.karmada.io payments/all" in found["pay"][0]


def test_names_narrowed_by_labels_are_judged_by_the_names():
    """Karmada matches a cluster only if it passes every part of an affinity: names listed
    with a label selector reach at most those names."""
    placement = {"clusterAffinity": {"clusterNames": ["member1"],
                                     "labelSelector": {"matchLabels": {"env": "prod"}}}}
    assert broken(bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
                         placement=placement)) == {}


TEAM = ClusterSelector((("team", "payments"),))
BY_LABELS = Tenancy((Tenant("payments", ("apps/payments/**",), ("payments",),
                            cluster_selector=TEAM),))
MEMBERS = Members({"member1": {"team": "payments", "env": "prod"},
                   "member2": {"team": "billing"}, "member3": {}})


@pytest.mark.parametrize(("options", "words"), [
    ({"placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}, None),
    ({"placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}},
     "names member2: tenant payments may place only on clusters labelled team=payments"),
    ({"placement": {"clusterAffinity": {"clusterNames": ["member9"]}}},
     "names member9"),  # not a member: its labels cannot show it is the tenant's
    ({"placement": {"clusterAffinity": {"labelSelector": {
        "matchLabels": {"team": "payments", "env": "prod"}}}}}, None),
    ({"placement": {"clusterAffinity": {"labelSelector": {"matchExpressions": [
        {"key": "team", "operator": "In", "values": ["payments"]}]}}}}, None),
    ({"placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}},
     "selects clusters by labels that do not imply the tenant's"),
    ({"placement": {"clusterAffinity": {"labelSelector": {"matchExpressions": [
        {"key": "team", "operator": "In", "values": ["payments", "billing"]}]}}}},
     "do not imply"),
    ({"placement": {"clusterAffinity": {"labelSelector": {"matchExpressions": [
        {"key": "team", "operator": "Exists"}]}}}}, "do not imply"),
    ({"clusters": (Customization((), ClusterSelector((("team", "payments"),)), {"a": 1}),)},
     None),
    ({"clusters": (Customization(("member2",), values={"a": 1}),)},
     "clusters[0] in apps/payments/api/bundle.yaml names member2"),
    ({"rollout": RolloutSpec((Wave(("member1",)), Wave(selector=ClusterSelector(
        (("ring", "2"),)))))}, "rollout.waves[1] in apps/payments/api/bundle.yaml selects"),
])
def test_a_tenant_whose_clusters_are_chosen_by_labels(options, words):
    """Named clusters are judged by the labels Karmada's Clusters carry now; a selector
    passes only if it implies the tenant's, whatever labels a cluster joining later has."""
    found = broken(bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
                          **options), tenancy=BY_LABELS, members=MEMBERS)
    if words is None:
        assert found == {}
    else:
        assert any(words in line for line in found["pay"]), found


def test_unreadable_clusters_fail_the_names_but_not_an_implied_selector():
    unread = Members(error="connection refused")
    named = bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"))
    found = broken(named, tenancy=BY_LABELS, members=unread)
    assert "Karmada's Clusters cannot be read to see their labels (connection refused)" in \
        found["pay"][0]
    implied = bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
                     placement={"clusterAffinity": {"labelSelector": {
                         "matchLabels": {"team": "payments"}}}})
    assert broken(implied, tenancy=BY_LABELS, members=unread) == {}


def test_without_the_clusters_names_are_not_judged_and_the_plan_says_so():
    named = bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
                   placement={"clusterAffinity": {"clusterNames": ["member2"]}})
    assert broken(named, tenancy=BY_LABELS, members=None) == {}
    assert unjudged(BY_LABELS) == [
        "tenant payments places only on clusters labelled team=payments: the member clusters "
        "its bundles name are checked against their labels in the loop (or plan "
        "--kubeconfig), not here"]
    assert unjudged(TENANCY) == []


@pytest.mark.parametrize(("narrow", "wide", "implied"), [
    ({"matchLabels": {"a": "1", "b": "2"}}, {"matchLabels": {"a": "1"}}, True),
    ({"matchLabels": {"a": "1"}}, {"matchLabels": {"a": "1", "b": "2"}}, False),
    ({"matchLabels": {"a": "2"}}, {"matchLabels": {"a": "1"}}, False),
    ({"matchLabels": {"a": "1"}}, {"matchExpressions": [
        {"key": "a", "operator": "In", "values": ["1", "2"]}]}, True),
    ({"matchLabels": {"a": "1"}}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
     True),
    ({"matchLabels": {"a": "3"}}, {"matchExpressions": [
        {"key": "a", "operator": "NotIn", "values": ["1", "2"]}]}, True),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"matchExpressions": [
        {"key": "a", "operator": "NotIn", "values": ["1"]}]}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1", "2"]}]},
     {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
     {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1", "2"]}]}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
     {"matchLabels": {"a": "1"}}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},
     {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, True),
    ({}, {"matchLabels": {"a": "1"}}, False),
])
def test_one_selector_implies_another(narrow, wide, implied):
    """Checked against every label set over a small alphabet: `implies` never says yes
    where a cluster could match the narrow selector and not the wide one."""
    n, w = selector_of(narrow), selector_of(wide)
    assert n is not None and w is not None
    assert implies(n, w) is implied
    if implied:
        import itertools
        for a, b in itertools.product([None, "1", "2", "3"], repeat=2):
            labels = {k: v for k, v in (("a", a), ("b", b)) if v is not None}
            assert not n.matches(labels) or w.matches(labels), labels


def test_a_selector_gitgate_cannot_read_proves_nothing():
    assert selector_of({"matchExpressions": [{"key": "a", "operator": "Near"}]}) is None
    assert selector_of({"matchLabels": ["a"]}) is None
    assert selector_of({"matchExpressions": [{"key": "a", "operator": "In",
                                              "values": ["1"]}]}) == ClusterSelector(
        (), (Requirement("a", "In", ("1",)),))


def test_a_propagation_policy_in_the_tenants_folder_is_held_to_its_clusters_too():
    policy = {**obj("PropagationPolicy", "mine", "payments", "policy.karmada.io/v1alpha1"),
              "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                       "placement": {"clusterAffinity": {"clusterNames": ["member9"]}}}}
    found = broken(bundle("pay", "apps/payments/api", obj("ConfigMap", "c", "payments"),
                          policy))
    assert any("PropagationPolicy.policy.karmada.io payments/mine names member9" in line
               for line in found["pay"])


def test_a_tenants_override_cannot_act_on_another_tenants_or_the_platforms_bundle():
    override = obj("OverridePolicy", "o", "payments", "policy.karmada.io/v1alpha1")
    acting = Bundle("pay", Source("apps/payments/o", SourceKind.RAW,
                                  BundleOptions(placement=PLACED), "pay"), (override,),
                    acts_on=((ObjectRef.of(override), ("infra",)),))
    found = broken(acting, bundle("infra", "platform/infra", obj("ConfigMap", "c", "x")))
    assert found == {"pay": ["OverridePolicy.policy.karmada.io payments/o acts on infra, outside "
                             "tenant payments: a tenant's policies act only on its own bundles"]}


def test_a_folder_two_tenants_claim_and_a_refused_one_fail():
    other = Tenant("billing", ("apps/*",), ("payments",))
    found = broken(GOOD, tenancy=Tenancy((PAY, other)))
    assert "claimed by tenants payments, billing" in found["pay"][0]
    refused = broken(bundle("infra", "platform/x", obj("ConfigMap", "c", "x")),
                     tenancy=Tenancy((PAY,), REFUSE))
    assert "belongs to no tenant" in refused["infra"][0]


def test_a_failed_bundle_keeps_its_own_problems():
    failed = Bundle("pay", GOOD.source, (), problems=(), labels={})
    assert police([failed], TENANCY) == [failed]


@pytest.mark.parametrize(("path", "pattern", "matches"), [
    ("apps/payments", "apps/payments/**", True),
    ("apps/payments/api/v2", "apps/payments/**", True),
    ("apps/paymentsX", "apps/payments/**", False),
    ("apps/payments-eu", "apps/payments*/**", True),
    ("apps/payments", "apps/payments", True),
    ("apps/payments/api", "apps/payments", False),
    ("apps", "apps/payments/**", False),
])
def test_tenant_paths(path, pattern, matches):
    assert path_matches(path, pattern) is matches


def test_a_gate_committed_in_a_tenants_folder_holds_that_tenant_alone():
    """A Gate in a source folder holds every bundle (whoever wrote it expects a hold); in a
    tenant's folder it must not freeze the other teams: it holds that tenant's bundles."""
    from datetime import UTC, datetime

    from gitgate.model import RenderedSource
    from gitgate.plan import make_plan

    gate = {"apiVersion": "gitgate.io/v1alpha1", "kind": "Gate", "metadata": {"name": "g"},
            "spec": {"bundles": ["*"], "reason": "x"}}

    def source(path: str, *objects: dict) -> RenderedSource:
        options = BundleOptions(name=path.replace("/", "-"), placement=PLACED)
        return RenderedSource(Source(path, SourceKind.RAW, options, options.name or path),
                              objects)
    rendered = (source("apps/payments/api", obj("ConfigMap", "c", "payments"), gate),
                source("apps/payments/web", obj("ConfigMap", "w", "payments")),
                source("platform/infra", obj("ConfigMap", "i", "infra")))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    verdicts = {b.bundle.name: str(b.verdict.verdict)
                for b in make_plan(rendered, {}, now, "r", tenancy=TENANCY).bundles}
    assert verdicts == {"apps-payments-api": "failed", "apps-payments-web": "held",
                        "platform-infra": "apply"}  # api: its Gate is cluster-scoped too
    untenanted = {b.bundle.name: str(b.verdict.verdict)
                  for b in make_plan(rendered, {}, now, "r").bundles}
    assert set(untenanted.values()) == {"held"}  # without tenants: every bundle, as before


# ------------------------------------------------------------ issue 60: who says the scope
def policed(*bundles: Bundle, scopes: ScopeTable, tenancy: Tenancy = TENANCY
            ) -> dict[str, list[str]]:
    return {b.name: [p.message for p in b.problems]
            for b in police(list(bundles), tenancy, None, scopes) if b.failed}


def test_a_namespace_on_a_cluster_scoped_kind_does_not_make_it_the_tenants():
    crb = obj("ClusterRoleBinding", "admin", "payments", "rbac.authorization.k8s.io/v1")
    allowed = Tenant("payments", ("apps/payments/**",), ("payments",))
    found = policed(bundle("pay", "apps/payments/a", crb), scopes=ScopeTable(),
                    tenancy=Tenancy((allowed,)))
    assert "is cluster-scoped" in found["pay"][0]
    assert "as Kubernetes and Karmada serve it" in found["pay"][0]


def test_the_api_servers_word_decides_over_the_built_in_table():
    served = ScopeTable(((("example.com", "Widget"), False),), served=True)
    found = policed(bundle("pay", "apps/payments/a",
                           obj("Widget", "w", "payments", "example.com/v1")), scopes=served)
    assert "as the API server serves it" in found["pay"][0]


def test_a_kind_only_a_repo_crd_defines_waits_for_the_server_to_establish_it():
    pending = ScopeTable(((("example.com", "Widget"), True),),
                         frozenset({("example.com", "Widget")}), served=True)
    found = policed(bundle("pay", "apps/payments/a",
                           obj("Widget", "w", "payments", "example.com/v1")), scopes=pending)
    assert "the API server does not serve yet" in found["pay"][0]
    offline = ScopeTable(((("example.com", "Widget"), True),))  # the CRD, no server
    assert policed(bundle("pay", "apps/payments/a",
                          obj("Widget", "w", "payments", "example.com/v1")),
                   scopes=offline) == {}


@pytest.mark.parametrize(("actor", "words"), [
    ({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy",
      "metadata": {"name": "all"}, "spec": {"overrideRules": []}}, "selects no resources"),
    ({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
      "metadata": {"name": "roles"}, "spec": {"resourceSelectors": [
          {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}]}},
     "selects cluster-scoped objects"),
    ({"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
      "metadata": {"name": "dns"}, "spec": {"workloads": [
          {"apiVersion": "apps/v1", "kind": "Deployment", "name": "coredns",
           "namespace": "kube-system"}]}}, "selects in namespace kube-system"),
])
def test_a_cluster_wide_karmada_object_is_held_to_the_tenants_namespaces(actor, words):
    infra = Tenant("infra", ("apps/infra/**",), ("infra",), cluster_scoped=True)
    found = policed(bundle("infra", "apps/infra/p", actor), scopes=ScopeTable(),
                    tenancy=Tenancy((infra,)))
    assert any(words in line for line in found["infra"]), found
    within = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
              "metadata": {"name": "mine"}, "spec": {"resourceSelectors": [
                  {"apiVersion": "v1", "kind": "Secret", "namespace": "infra"},
                  {"apiVersion": "v1", "kind": "Namespace", "name": "infra"}]}}
    assert policed(bundle("infra", "apps/infra/p", within), scopes=ScopeTable(),
                   tenancy=Tenancy((infra,))) == {}


def test_a_repo_crd_never_changes_a_built_in_kinds_scope():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "x"}, "spec": {"group": "", "scope": "Cluster",
                                               "names": {"kind": "ConfigMap"}}}
    assert crd_scopes([crd]) == {}
    assert is_namespaced("apps.karmada.io", "WorkloadRebalancer", {}) is False
    assert is_namespaced("apps.karmada.io", "SomethingNew", {}) is None  # not guessed


def test_a_claim_stays_with_the_folder_that_has_the_right_then_with_the_live_holder():
    wrong = {"a": "outside its namespaces", "b": None, "c": None}.get
    assert arbitrate(["a", "b"], wrong, None).keeper == "b"
    assert arbitrate(["b", "c"], wrong, "c").keeper == "c"
    assert arbitrate(["b", "c"], wrong, "c").held
    assert arbitrate(["b", "c"], wrong, None).keeper is None
    assert arbitrate(["a", "b", "c"], wrong, "a").keeper is None  # a holder without the right
