"""Tenants of a shared repo (issue 60, items 1 and 2), through the real CLI against the API
emulator: the API server alone says which kinds are cluster-scoped (a repo's CRD never does),
a tenant's mistake fails only that tenant, and every request for a tenant's bundle goes as
the tenant."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.cli import main, wall_clock
from tests.conftest import committed_repo, write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration

TENANTS = """
defaults:
  placement: {clusterAffinity: {clusterNames: [member1]}}
tenants:
  - name: orders
    paths: ["apps/orders/**"]
    namespaces: [orders]
  - name: billing
    paths: ["apps/billing/**"]
    namespaces: [billing]
"""
NAMESPACES = {"platform/ns/bundle.yaml": "name: ns\n",
              "platform/ns/ns.yaml": "".join(
                  f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
                  for n in ("orders", "billing", "ops"))}


def cm(name: str, namespace: str, value: str = "1") -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: "
            f"{namespace}}}\ndata: {{v: '{value}'}}\n")


def shared(tmp_path, files: dict[str, str], config: str = TENANTS):
    return write_files(tmp_path / "repo", {"gitgate.yaml": config, **NAMESPACES,
                                           "apps/billing/api/bundle.yaml": "name: billing-api\n"
                                                                           "dependsOn: [ns]\n",
                                           "apps/billing/api/cm.yaml": cm("api", "billing"),
                                           **files})


def cluster_of(emulator, tmp_path) -> tuple[str, KubeCluster]:
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    return kubeconfig, KubeCluster(load_client(kubeconfig))


def apply(root, kubeconfig: str, *more: str) -> tuple[subprocess.CompletedProcess, dict]:
    done = gitgate("apply", str(root), "--kubeconfig", kubeconfig, "-o", "json", *more)
    assert done.stdout, done.stderr[-3000:]
    return done, {b["name"]: b for b in json.loads(done.stdout)["bundles"]}


def plan_json(root, *more: str) -> tuple[subprocess.CompletedProcess, dict]:
    done = gitgate("plan", str(root), "-o", "json", *more)
    assert done.stdout, done.stderr[-3000:]
    return done, json.loads(done.stdout)


def planned(document: dict) -> dict[str, dict]:
    return {b["name"]: b for b in document["bundles"]}


def writes_to(emulator, fragment: str) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in emulator.state.requests
            if r.method in ("PATCH", "POST", "PUT", "DELETE") and fragment in r.path
            and r.query.get("dryRun") != "All"]


# ------------------------------------------------------------------ 1. scope is the server's
CRB_AS_NAMESPACED = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterrolebindings.rbac.authorization.k8s.io}
spec:
  group: rbac.authorization.k8s.io
  scope: Namespaced
  names: {kind: ClusterRoleBinding, plural: clusterrolebindings, singular: clusterrolebinding}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""
ADMIN_BINDING = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: orders-admin, namespace: orders}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: orders}]
"""


def test_a_repo_crd_cannot_make_a_cluster_role_binding_a_tenants_object(tmp_path, emulator):
    """The critical case: a tenant without `clusterScoped` ships a CRD redeclaring
    ClusterRoleBinding as namespaced (that folder is refused) and, in another folder, a
    binding to cluster-admin with `namespace: orders`. The binding is cluster-scoped, as the
    API server serves it and as Kubernetes defines it: refused in the plan and never sent."""
    kubeconfig, cluster = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"apps/orders/crd/crd.yaml": CRB_AS_NAMESPACED,
                             "apps/orders/crd/bundle.yaml": "name: orders-crd\n",
                             "apps/orders/admin/crb.yaml": ADMIN_BINDING,
                             "apps/orders/admin/bundle.yaml": "name: orders-admin\n"})
    offline, document = plan_json(root)
    admin = planned(document)["orders-admin"]
    assert offline.returncode == 1 and admin["verdict"] == "failed"
    assert "ClusterRoleBinding.rbac.authorization.k8s.io orders-admin is cluster-scoped" in \
        json.dumps(admin)

    done, results = apply(root, kubeconfig)
    assert done.returncode == 1
    assert results["orders-admin"]["reason"] == "OutsideTenant"
    assert "is cluster-scoped" in results["orders-admin"]["message"]
    assert "as the API server serves it" in results["orders-admin"]["message"]
    assert results["orders-crd"]["reason"] == "OutsideTenant"
    assert not results["billing-api"]["failed"]
    assert writes_to(emulator, "clusterrolebindings") == []
    assert writes_to(emulator, "customresourcedefinitions/clusterrolebindings") == []
    assert cluster.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "",
                       "orders-admin") is None


REBALANCER = """
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {name: move-dns, namespace: orders}
spec:
  workloads: [{apiVersion: apps/v1, kind: Deployment, name: coredns, namespace: kube-system}]
"""
REBALANCER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "workloadrebalancers.apps.karmada.io"},
    "spec": {"group": "apps.karmada.io", "scope": "Cluster",
             "names": {"kind": "WorkloadRebalancer", "plural": "workloadrebalancers",
                       "singular": "workloadrebalancer"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_a_karmada_kind_gitgate_lists_nowhere_is_not_taken_for_namespaced(tmp_path, emulator):
    """A WorkloadRebalancer is cluster-scoped on Karmada: a namespace-only tenant's one is
    refused offline (the built-in table knows it) and online (the server serves it so), and
    nothing reschedules kube-system's coredns."""
    emulator.state.install_crd(REBALANCER_CRD)
    kubeconfig, _ = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"apps/orders/dns/rebalance.yaml": REBALANCER,
                             "apps/orders/dns/bundle.yaml": "name: orders-dns\n"})
    offline, document = plan_json(root)
    dns = planned(document)["orders-dns"]
    assert offline.returncode == 1 and dns["verdict"] == "failed"
    assert "WorkloadRebalancer.apps.karmada.io move-dns is cluster-scoped" in json.dumps(dns)

    done, results = apply(root, kubeconfig)
    assert results["orders-dns"]["reason"] == "OutsideTenant"
    assert not results["billing-api"]["failed"]
    assert writes_to(emulator, "workloadrebalancers") == []


def test_a_kind_nobody_knows_fails_closed_for_a_tenant(tmp_path, emulator):
    """A kind neither the built-in table, a repo CRD nor the API server knows: a restricted
    tenant's object of it is refused, saying why, offline and online alike."""
    kubeconfig, _ = cluster_of(emulator, tmp_path)
    widget = ("apiVersion: things.example.com/v1\nkind: Gadget\n"
              "metadata: {name: g, namespace: orders}\n")
    root = shared(tmp_path, {"apps/orders/gadget/g.yaml": widget,
                             "apps/orders/gadget/bundle.yaml": "name: orders-gadget\n"})
    _, document = plan_json(root)
    said = json.dumps(planned(document)["orders-gadget"])
    assert "OutsideTenant" in said and "whether it is namespaced cannot be told" in said
    _, results = apply(root, kubeconfig)
    assert results["orders-gadget"]["reason"] == "OutsideTenant"
    assert "the API server does not serve the kind Gadget" in results["orders-gadget"]["message"]
    assert not results["billing-api"]["failed"]


CONFIGMAPS_CLUSTER_WIDE = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: configmaps.example.com}
spec:
  group: ""
  scope: Cluster
  names: {kind: ConfigMap, plural: configmaps}
  versions: [{name: v1, served: true, storage: true}]
"""


def test_a_refused_crd_of_one_tenant_changes_no_other_tenants_configmaps(tmp_path, emulator):
    """A CRD declaring ConfigMaps cluster-scoped fails its own folder only: the other
    tenant's ConfigMaps keep their namespace, pass its rules, and are applied."""
    kubeconfig, cluster = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"apps/orders/crd/crd.yaml": CONFIGMAPS_CLUSTER_WIDE,
                             "apps/orders/crd/bundle.yaml": "name: orders-crd\n",
                             "apps/orders/web/cm.yaml": cm("api", "orders"),
                             "apps/orders/web/bundle.yaml": "name: orders-web\n"
                                                            "dependsOn: [ns]\n"})
    check = gitgate("check", str(root), "-o", "json")
    failed = sorted(c["name"] for c in json.loads(check.stdout)["cases"] if c["failures"])
    assert failed == ["orders-crd"]
    done, results = apply(root, kubeconfig)
    assert [n for n, b in results.items() if b["failed"]] == ["orders-crd"]
    assert cluster.get("v1", "ConfigMap", "billing", "api") is not None
    assert cluster.get("v1", "ConfigMap", "orders", "api") is not None


# ------------------------------------------------------- 2. one tenant never fails another
def test_a_tenant_rendering_another_tenants_object_fails_alone(tmp_path, emulator):
    """orders renders billing's ConfigMap (billing's namespace: not its right): orders'
    folder fails, billing keeps applying."""
    kubeconfig, cluster = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"apps/orders/steal/cm.yaml": cm("api", "billing", "stolen"),
                             "apps/orders/steal/bundle.yaml": "name: orders-steal\n"})
    _, document = plan_json(root)
    bundles = planned(document)
    assert bundles["billing-api"]["verdict"] != "failed"
    assert bundles["orders-steal"]["verdict"] == "failed"
    _, results = apply(root, kubeconfig)
    assert not results["billing-api"]["failed"]
    assert "is also rendered by apps/billing/api" in json.dumps(document)
    assert cluster.get("v1", "ConfigMap", "billing", "api")["data"] == {"v": "1"}


def test_a_symlinked_file_of_another_tenant_fails_only_the_linking_tenant(tmp_path, emulator):
    kubeconfig, cluster = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"apps/orders/copy/bundle.yaml": "name: orders-copy\n"})
    os.symlink(root / "apps/billing/api/cm.yaml", root / "apps/orders/copy/cm.yaml")
    _, results = apply(root, kubeconfig)
    assert not results["billing-api"]["failed"]
    assert results["orders-copy"]["failed"]
    assert cluster.get("v1", "ConfigMap", "billing", "api") is not None


def test_a_tenant_rendering_a_platform_object_does_not_fail_the_platform(tmp_path, emulator):
    kubeconfig, cluster = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"platform/ops/bundle.yaml": "name: ops\ndependsOn: [ns]\n",
                             "platform/ops/cm.yaml": cm("ops", "ops"),
                             "apps/orders/ops/bundle.yaml": "name: orders-ops\n",
                             "apps/orders/ops/cm.yaml": cm("ops", "ops", "mine"),
                             "apps/orders/ops/ns.yaml": "apiVersion: v1\nkind: Namespace\n"
                                                        "metadata: {name: ops}\n"})
    _, results = apply(root, kubeconfig)
    assert not results["ns"]["failed"]  # the platform's Namespace ops, also claimed by orders
    assert not results["ops"]["failed"]
    assert results["orders-ops"]["failed"]
    assert cluster.get("v1", "ConfigMap", "ops", "ops")["data"] == {"v": "1"}


def test_a_bundle_name_taken_from_a_live_bundle_fails_only_the_newcomer(tmp_path, emulator):
    """orders names its bundle like billing's live one: billing's record holds the name, so
    billing keeps applying (its change goes out) and orders fails, saying so."""
    kubeconfig, cluster = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {})
    first, _ = apply(root, kubeconfig)
    assert first.returncode == 0, first.stdout
    write_files(root, {"apps/orders/api/bundle.yaml": "name: billing-api\n",
                       "apps/orders/api/cm.yaml": cm("mine", "orders"),
                       "apps/billing/api/cm.yaml": cm("api", "billing", "2")})
    done, results = apply(root, kubeconfig)
    assert done.returncode == 1  # orders' folder failed
    assert not results["billing-api"]["failed"]
    assert cluster.get("v1", "ConfigMap", "billing", "api")["data"] == {"v": "2"}
    assert cluster.get("v1", "ConfigMap", "orders", "mine") is None
    said = done.stderr + done.stdout
    assert "the bundle name 'billing-api' is also claimed by apps/billing/api" in said
    assert "apps/orders/api" in said


def test_between_equals_the_live_holder_keeps_the_object(tmp_path, emulator):
    """Two tenants sharing a namespace both render one ConfigMap: the one whose record holds
    it live keeps it and applies; the newcomer fails."""
    config = TENANTS.replace("namespaces: [billing]", "namespaces: [billing, orders]")
    kubeconfig, cluster = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"apps/orders/web/bundle.yaml": "name: orders-web\n"
                                                            "dependsOn: [ns]\n",
                             "apps/orders/web/cm.yaml": cm("web", "orders")}, config)
    assert apply(root, kubeconfig)[0].returncode == 0
    write_files(root, {"apps/billing/api/more.yaml": cm("web", "orders", "other"),
                       "apps/orders/web/cm.yaml": cm("web", "orders", "2")})
    _, results = apply(root, kubeconfig)
    assert not results["orders-web"]["failed"]
    assert results["billing-api"]["failed"]
    assert "holds it live" in results["billing-api"]["message"]
    assert cluster.get("v1", "ConfigMap", "orders", "web")["data"] == {"v": "2"}


CLUSTER_POLICY = """
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: infra-secrets}
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: Secret}
    - {apiVersion: v1, kind: Secret, namespace: karmada-system}
  placement: {clusterAffinity: {clusterNames: [member1]}}
"""


def test_a_cluster_wide_policy_is_judged_by_what_it_could_select(tmp_path, emulator):
    """A clusterScoped tenant's ClusterPropagationPolicy selecting every Secret (and
    karmada-system's) selects no bundle of the repo, yet would send kube-system's Secrets to
    member1: refused, and never written."""
    config = TENANTS + ("  - name: infra\n    paths: [\"apps/infra/**\"]\n"
                        "    namespaces: [infra]\n    clusterScoped: true\n")
    kubeconfig, _ = cluster_of(emulator, tmp_path)
    root = shared(tmp_path, {"apps/infra/policy/cpp.yaml": CLUSTER_POLICY,
                             "apps/infra/policy/bundle.yaml": "name: infra-policy\n"}, config)
    check = gitgate("check", str(root), "-o", "json")
    failures = {c["name"]: c["failures"] for c in json.loads(check.stdout)["cases"]
                if c["failures"]}
    assert list(failures) == ["infra-policy"]
    said = json.dumps(failures)
    assert "names no namespace, so it selects in every namespace" in said
    assert "selects in namespace karmada-system, outside tenant infra" in said
    _, results = apply(root, kubeconfig)
    assert results["infra-policy"]["reason"] == "OutsideTenant"
    assert writes_to(emulator, "clusterpropagationpolicies/infra-secrets") == []


INFRA = TENANTS + ("  - name: infra\n    paths: [\"apps/infra/**\"]\n"
                   "    namespaces: [infra]\n    clusterScoped: true\n")
INTERPRETER_WEBHOOK = """
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {name: infra-interpreter}
webhooks:
  - name: all.infra.example.com
    rules: [{operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], kinds: ["*"]}]
    clientConfig: {url: "https://interpreter.example.com/interpret"}
    interpreterContextVersions: ["v1alpha1"]
"""
TAINT_ALL = """
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: infra-evict-all}
spec:
  addOnConditions: [{conditionType: Ready, operator: In, statusValues: ["True"]}]
  taints: [{key: infra, effect: NoExecute}]
"""
CLUSTER = ("apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: member1}\n"
           "spec: {taints: [{key: infra, effect: NoExecute}]}\n")
REMEDY = ("apiVersion: remedy.karmada.io/v1alpha1\nkind: Remedy\nmetadata: {name: infra}\n"
          "spec: {actions: [TrafficControl]}\n")
MUTATING = ("apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
            "metadata: {name: infra-mutate}\nwebhooks: [{name: all.infra.example.com, "
            "clientConfig: {url: 'https://m.example.com'}, rules: [{operations: ['*'], "
            "apiGroups: ['*'], apiVersions: ['*'], resources: ['*']}], sideEffects: None, "
            "admissionReviewVersions: [v1]}]\n")
AGGREGATED_ROLE = ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: "
                   "{name: infra-everything, labels: "
                   "{rbac.authorization.k8s.io/aggregate-to-view: 'true'}}\n"
                   "rules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n")


@pytest.mark.parametrize(("manifest", "ref", "limited"), [
    (INTERPRETER_WEBHOOK, "ResourceInterpreterWebhookConfiguration.config.karmada.io "
                          "infra-interpreter", False),
    (TAINT_ALL, "ClusterTaintPolicy.policy.karmada.io infra-evict-all", False),
    (TAINT_ALL, "ClusterTaintPolicy.policy.karmada.io infra-evict-all", True),
    (CLUSTER, "Cluster.cluster.karmada.io member1", False),
    (REMEDY, "Remedy.remedy.karmada.io infra", False),
    (MUTATING, "MutatingWebhookConfiguration.admissionregistration.k8s.io infra-mutate", False),
    (AGGREGATED_ROLE, "ClusterRole.rbac.authorization.k8s.io infra-everything", False),
], ids=["interpreter-webhook", "taint-policy", "taint-policy-of-member1-tenant", "cluster",
        "remedy", "admission-webhook", "aggregated-cluster-role"])
def test_a_cluster_scoped_tenant_writes_nothing_whose_reach_gitgate_cannot_prove(
        tmp_path, manifest, ref, limited):
    """`clusterScoped: true` is no licence to act on every tenant: a cluster-scoped object
    whose reach gitgate cannot read from it (it interprets, taints, admits or grants for the
    whole cluster) fails the tenant's bundle in `check`; the same object in a platform folder
    passes."""
    config = INFRA.replace("    clusterScoped: true\n", "    clusterScoped: true\n"
                           "    clusters: [member1]\n") if limited else INFRA
    root = shared(tmp_path, {"apps/infra/x/obj.yaml": manifest,
                             "apps/infra/x/bundle.yaml": "name: infra-x\n",
                             "platform/x/obj.yaml": manifest.replace("name: ", "name: p-", 1),
                             "platform/x/bundle.yaml": "name: platform-x\n"}, config)
    check = gitgate("check", str(root), "-o", "json")
    failures = {c["name"]: c["failures"] for c in json.loads(check.stdout)["cases"]
                if c["failures"]}
    assert check.returncode == 1 and list(failures) == ["infra-x"], check.stdout
    said = json.dumps(failures["infra-x"])
    assert "OutsideTenant" in said and ref in said, said
    assert "gitgate cannot prove" in said and "tenant infra" in said


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.infra.example.com"},
    "spec": {"group": "infra.example.com", "scope": "Cluster",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_a_served_cluster_scoped_kind_of_another_group_is_not_a_tenants(tmp_path, emulator):
    """A kind the API server serves cluster-scoped, of a group gitgate knows nothing of: a
    clusterScoped tenant's object of it fails closed and is never sent, while its
    ClusterPropagationPolicy that selects within its namespace is applied."""
    emulator.state.install_crd(WIDGET_CRD)
    kubeconfig, _ = cluster_of(emulator, tmp_path)
    within = ("apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\n"
              "metadata: {name: infra-own}\nspec:\n  resourceSelectors: "
              "[{apiVersion: v1, kind: ConfigMap, namespace: infra}]\n"
              "  placement: {clusterAffinity: {clusterNames: [member1]}}\n")
    root = shared(tmp_path, {"apps/infra/w/w.yaml": "apiVersion: infra.example.com/v1\n"
                                                    "kind: Widget\nmetadata: {name: w}\n",
                             "apps/infra/w/bundle.yaml": "name: infra-widget\n",
                             "apps/infra/p/cpp.yaml": within,
                             "apps/infra/p/bundle.yaml": "name: infra-policy\n"}, INFRA)
    done, results = apply(root, kubeconfig)
    assert results["infra-widget"]["reason"] == "OutsideTenant"
    assert "gitgate cannot prove" in results["infra-widget"]["message"]
    assert writes_to(emulator, "widgets") == []
    assert not results["infra-policy"]["failed"], results["infra-policy"]
    assert writes_to(emulator, "clusterpropagationpolicies/infra-own")


# ------------------------------------------------------ 3. every request as the tenant
ACCOUNT = "    serviceAccount: {namespace: gitgate-tenants, name: orders}\n"
ORDERS_USER = "system:serviceaccount:gitgate-tenants:orders"


def with_account(config: str = TENANTS) -> str:
    return config.replace("    namespaces: [orders]\n", "    namespaces: [orders, extra]\n"
                          + ACCOUNT)


def test_plans_live_diff_reads_and_tries_a_tenants_objects_as_the_tenant(tmp_path, emulator):
    """`plan --kubeconfig` shows `failed` (forbidden), not `created`, for what the tenant's
    RBAC refuses, and every request about the tenant's objects went as the tenant."""
    kubeconfig, _ = cluster_of(emulator, tmp_path)
    emulator.state.grants = {ORDERS_USER: {"orders"}}
    root = shared(tmp_path, {"apps/orders/web/bundle.yaml": "name: orders-web\n",
                             "apps/orders/web/cm.yaml": cm("web", "orders"),
                             "apps/orders/web/extra.yaml": cm("web", "extra")}, with_account())
    emulator.state.requests.clear()
    done = gitgate("plan", str(root), "--kubeconfig", kubeconfig, "-o", "json")
    changes = {(c["namespace"], c["name"]): c for b in json.loads(done.stdout)["bundles"]
               if b["name"] == "orders-web" for c in b["changes"]}
    assert changes[("extra", "web")]["action"] == "failed", changes
    assert ORDERS_USER in changes[("extra", "web")]["message"]
    assert changes[("orders", "web")]["action"] == "created"
    about = [r for r in emulator.state.requests if "/configmaps/web" in r.path]
    assert about and {r.impersonated for r in about} == {ORDERS_USER}


FREEZE = """
apiVersion: gitgate.io/v1alpha1
kind: Gate
metadata: {name: freeze-orders}
spec:
  bundles: [orders-web]
  action: suspend
  reason: incident
"""


def test_the_suspension_written_before_rendering_goes_as_the_tenant(tmp_path, emulator):
    kubeconfig, _ = cluster_of(emulator, tmp_path)
    emulator.state.grants = {ORDERS_USER: {"orders"}}
    root = shared(tmp_path, {"apps/orders/web/bundle.yaml": "name: orders-web\n",
                             "apps/orders/web/cm.yaml": cm("web", "orders")}, with_account())
    committed_repo(root)
    assert apply(root, kubeconfig)[0].returncode == 0
    write_files(root, {"gates/freeze.yaml": FREEZE})
    emulator.state.requests.clear()
    done, results = apply(root, kubeconfig)
    assert results["orders-web"]["verdict"] == "suspended", done.stdout
    policy = [r for r in emulator.state.requests
              if "/propagationpolicies/gitgate-orders-web" in r.path]
    assert len([r for r in policy if r.method == "PATCH"]) >= 2  # before rendering, then
    assert {r.impersonated for r in policy} == {ORDERS_USER}


def test_a_resync_reads_a_tenants_objects_as_the_tenant(tmp_path, emulator, capsys):
    """The lists a resync reads the live objects with go as the tenant whose objects they
    are (the clock is injected: the resync is due at once)."""
    kubeconfig, _ = cluster_of(emulator, tmp_path)
    emulator.state.grants = {ORDERS_USER: {"orders"}}
    root = shared(tmp_path, {"apps/orders/web/bundle.yaml": "name: orders-web\n",
                             "apps/orders/web/cm.yaml": cm("web", "orders")}, with_account())
    flags = ["apply", str(root), "--kubeconfig", kubeconfig, "-o", "json", "--resync", "1s"]
    assert main(flags, clock=wall_clock) == 0
    later = wall_clock() + timedelta(seconds=5)
    emulator.state.requests.clear()
    capsys.readouterr()
    assert main(flags, clock=lambda: later) == 0
    lists = [r for r in emulator.state.requests
             if r.method == "GET" and r.path == "/api/v1/namespaces/orders/configmaps"]
    assert lists and {r.impersonated for r in lists} == {ORDERS_USER}
