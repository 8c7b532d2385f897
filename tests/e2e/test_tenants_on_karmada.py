"""A tenant impersonated on Karmada's API server (issue 27, item 2): the harness runs RBAC, so
the tenant's ServiceAccount, not gitgate's own admin identity, decides what its bundles may
write. Its bundle in a namespace it has a Role for reaches both members; its bundle in a
namespace it has none for fails with `forbidden` naming the account; the platform's bundle of
the same pass is applied as gitgate."""

from __future__ import annotations

import json

import pytest

from tests.e2e.karmada import PLACEMENT, gitgate, wait_for

pytestmark = pytest.mark.e2e


def cm(name: str, namespace: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}}}\n"


def rbac(run, account: str, granted: str) -> None:
    """A ServiceAccount in a namespace of its own, allowed ConfigMaps and PropagationPolicies in
    `granted` alone (the platform grants; the test is the platform here)."""
    api = run.karmada.api
    home = run.ns("tenants")
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": home}})
    api.apply({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": account, "namespace": home}})
    api.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "tenant", "namespace": granted},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                          "verbs": ["get", "list", "create", "patch", "delete"]},
                         {"apiGroups": ["policy.karmada.io"],
                          "resources": ["propagationpolicies"],
                          "verbs": ["get", "list", "create", "patch", "delete"]}]})
    api.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "tenant", "namespace": granted},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "tenant"},
               "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": home}]})


def test_an_impersonated_tenant_writes_only_where_karmadas_rbac_lets_it(run, karmada):
    pay, other, ops = run.ns("pay"), run.ns("payx"), run.ns("ops")
    namespaces = "".join(f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
                         for n in (pay, other, ops))
    run.repo.commit({"ns/bundle.yaml": f"name: {run.bundle('ns')}\n",
                     "ns/namespaces.yaml": namespaces}, "namespaces")
    run.apply()
    rbac(run, "payments", pay)
    home = run.ns("tenants")
    run.repo.commit({
        "gitgate.yaml": PLACEMENT + f"""tenants:
  - name: payments
    paths: ["apps/**"]
    namespaces: ["{pay}", "{other}"]
    serviceAccount: {{namespace: {home}, name: payments}}
""",
        "apps/api/bundle.yaml": f"name: {run.bundle('api')}\ndependsOn: [{run.bundle('ns')}]\n",
        "apps/api/cm.yaml": cm("api", pay),
        "apps/more/bundle.yaml": f"name: {run.bundle('more')}\n"
                                 f"dependsOn: [{run.bundle('ns')}]\n",
        "apps/more/cm.yaml": cm("more", other),
        "ops/bundle.yaml": f"name: {run.bundle('ops')}\ndependsOn: [{run.bundle('ns')}]\n",
        "ops/cm.yaml": cm("ops", ops)}, "a tenant")
    done = gitgate("apply", str(run.repo.root), "--kubeconfig", str(karmada.kubeconfig),
                   "--instance", run.run_id, "-o", "json")
    assert done.returncode == 1, done.stderr  # one bundle failed, the others went on
    results = {b["name"]: b for b in json.loads(done.stdout)["bundles"]}
    more = results[run.bundle("more")]
    assert more["failed"] and more["reason"] == "Forbidden", more
    assert f"system:serviceaccount:{home}:payments" in more["message"]
    assert not results[run.bundle("api")]["failed"]
    assert not results[run.bundle("ops")]["failed"]
    for member in ("member1", "member2"):  # Karmada dispatched what the tenant wrote
        wait_for(lambda m=member: karmada.configmap(m, pay, "api") is not None,
                 message=f"the tenant's ConfigMap on {member}")
        wait_for(lambda m=member: karmada.configmap(m, ops, "ops") is not None,
                 message=f"the platform's ConfigMap on {member}")
    assert karmada.configmap("karmada", other, "more") is None


def test_a_repo_crd_never_makes_a_cluster_role_binding_a_tenants_object_on_karmada(
        run, karmada):
    """On a real Karmada: a namespace-only tenant ships a CRD redeclaring ClusterRoleBinding
    as namespaced, and a binding to cluster-admin with `namespace:` set to its own namespace,
    and a WorkloadRebalancer (cluster-scoped on Karmada) moving kube-system's coredns. The API
    server's discovery decides: all three are refused, none reaches the server, and the other
    tenant's bundle is applied."""
    orders, billing = run.ns("orders"), run.ns("billing")
    namespaces = "".join(f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
                         for n in (orders, billing))
    admin = f"{run.run_id}-orders-admin"
    run.repo.commit({
        "gitgate.yaml": PLACEMENT + f"""tenants:
  - name: orders
    paths: ["apps/orders/**"]
    namespaces: ["{orders}"]
  - name: billing
    paths: ["apps/billing/**"]
    namespaces: ["{billing}"]
""",
        "ns/bundle.yaml": f"name: {run.bundle('ns')}\n",
        "ns/namespaces.yaml": namespaces,
        "apps/orders/crd/bundle.yaml": f"name: {run.bundle('orders-crd')}\n",
        "apps/orders/crd/crd.yaml": """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterrolebindings.rbac.authorization.k8s.io}
spec:
  group: rbac.authorization.k8s.io
  scope: Namespaced
  names: {kind: ClusterRoleBinding, plural: clusterrolebindings}
  versions: [{name: v1, served: true, storage: true,
              schema: {openAPIV3Schema: {type: object}}}]
""",
        "apps/orders/admin/bundle.yaml": f"name: {run.bundle('orders-admin')}\n",
        "apps/orders/admin/crb.yaml": f"""apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {admin}, namespace: {orders}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects: [{{kind: ServiceAccount, name: default, namespace: {orders}}}]
""",
        "apps/orders/move/bundle.yaml": f"name: {run.bundle('orders-move')}\n",
        "apps/orders/move/rebalancer.yaml": f"""apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {{name: {run.run_id}-move-dns, namespace: {orders}}}
spec:
  workloads: [{{apiVersion: apps/v1, kind: Deployment, name: coredns, namespace: kube-system}}]
""",
        "apps/billing/api/bundle.yaml": f"name: {run.bundle('billing')}\n"
                                        f"dependsOn: [{run.bundle('ns')}]\n",
        "apps/billing/api/cm.yaml": cm("api", billing)}, "a tenant reaching out")
    done = gitgate("apply", str(run.repo.root), "--kubeconfig", str(karmada.kubeconfig),
                   "--instance", run.run_id, "-o", "json")
    assert done.returncode == 1, done.stderr
    results = {b["name"]: b for b in json.loads(done.stdout)["bundles"]}
    for name in ("orders-crd", "orders-admin", "orders-move"):
        assert results[run.bundle(name)]["reason"] == "OutsideTenant", results[run.bundle(name)]
    assert "cluster-scoped" in results[run.bundle("orders-admin")]["message"]
    assert not results[run.bundle("billing")]["failed"]
    api = karmada.api
    assert api.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", admin) is None
    assert api.get("apps.karmada.io/v1alpha1", "WorkloadRebalancer", "",
                   f"{run.run_id}-move-dns") is None
    crd = api.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                  "clusterrolebindings.rbac.authorization.k8s.io")
    assert crd is None
    assert karmada.configmap("karmada", billing, "api") is not None
