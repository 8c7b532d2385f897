"""Tenants of a shared repo (issue 27, item 1), through the real CLI: `check` and `plan` catch
a team's folder acting beyond what it owns before it merges, and `apply` writes nothing of
that bundle while the rest of the pass goes on."""

from __future__ import annotations

import json

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from tests.conftest import write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration


def cm(name: str, namespace: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {namespace}}}\n"


def shared_repo(tmp_path, run: str, pay: str, ops: str, extra: dict[str, str]):
    """Platform namespaces; a payments tenant owning apps/payments (namespace `pay`, member1
    only, no Secrets); an ops folder of the platform."""
    return write_files(tmp_path / "repo", {
        "gitgate.yaml": f"""
            defaults:
              placement: {{clusterAffinity: {{clusterNames: [member1]}}}}
            tenants:
              - name: payments
                paths: ["apps/payments/**"]
                namespaces: ["{pay}"]
                clusters: [member1]
                kinds: {{deny: ["Secret"]}}
            """,
        "platform/ns/bundle.yaml": f"name: {run}-ns\n",
        "platform/ns/ns.yaml": "".join(
            f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
            for n in (pay, ops)),
        "platform/ops/bundle.yaml": f"name: {run}-ops\ndependsOn: [{run}-ns]\n",
        "platform/ops/cm.yaml": cm("ops", ops),
        "apps/payments/api/bundle.yaml": f"name: {run}-api\ndependsOn: [{run}-ns]\n",
        "apps/payments/api/cm.yaml": cm("api", pay),
        **extra})


def test_a_tenants_folder_cannot_write_into_the_platforms_namespace(tmp_path, kube):
    pay, ops = kube.ns("pay"), kube.ns("ops")
    root = shared_repo(tmp_path, kube.run_id, pay, ops, {
        "apps/payments/sneaky/bundle.yaml": f"name: {kube.run_id}-sneaky\n",
        "apps/payments/sneaky/cm.yaml": cm("planted", ops),
    })
    check = gitgate("check", str(root), "-o", "json")
    assert check.returncode == 1
    failed = {c["name"]: c["failures"] for c in json.loads(check.stdout)["cases"]
              if c["failures"]}
    assert list(failed) == [f"{kube.run_id}-sneaky"]
    [failure] = failed[f"{kube.run_id}-sneaky"]
    assert failure["type"] == "OutsideTenant"
    assert f"ConfigMap {ops}/planted is in namespace {ops}, outside tenant payments's " \
           f"namespaces ({pay})" in failure["message"]

    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    applied = gitgate("apply", str(root), *flags, "-o", "json")
    assert applied.returncode == 1  # a bundle failed; the others were applied
    results = {b["name"]: b for b in json.loads(applied.stdout)["bundles"]}
    assert results[f"{kube.run_id}-sneaky"]["reason"] == "OutsideTenant"
    assert not results[f"{kube.run_id}-api"]["failed"]
    assert kube.cluster.get("v1", "ConfigMap", ops, "planted") is None
    assert kube.cluster.get("v1", "ConfigMap", pay, "api") is not None
    assert kube.cluster.get("v1", "ConfigMap", ops, "ops") is not None


def test_a_tenant_that_later_breaks_a_rule_keeps_what_it_had_and_writes_nothing(tmp_path,
                                                                             kube):
    pay, ops = kube.ns("pay"), kube.ns("ops")
    root = shared_repo(tmp_path, kube.run_id, pay, ops, {})
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert gitgate("apply", str(root), *flags).returncode == 0
    write_files(root, {  # a Secret (denied) and member2 (not its cluster), and a change
        "apps/payments/api/bundle.yaml": f"name: {kube.run_id}-api\ndependsOn: "
                                         f"[{kube.run_id}-ns]\nplacement: {{clusterAffinity: "
                                         "{clusterNames: [member1, member2]}}\n",
        "apps/payments/api/cm.yaml": cm("api", pay).replace("}\n", "}\ndata: {v: '2'}\n"),
        "apps/payments/api/secret.yaml": f"apiVersion: v1\nkind: Secret\nmetadata: "
                                         f"{{name: s, namespace: {pay}}}\n"})
    kube.cluster.forget()
    plan = gitgate("plan", str(root))
    row = next(line for line in plan.stdout.splitlines() if f"{kube.run_id}-api " in line)
    assert " failed " in row
    applied = gitgate("apply", str(root), *flags, "-o", "json")
    api = next(b for b in json.loads(applied.stdout)["bundles"]
               if b["name"] == f"{kube.run_id}-api")
    assert api["reason"] == "OutsideTenant" and "member2" in api["message"]
    assert [w for w in kube.bundle_writes() if f"/namespaces/{pay}/" in w[1]] == []
    live = kube.cluster.get("v1", "ConfigMap", pay, "api")
    assert live is not None and "data" not in live  # neither changed nor pruned


def test_a_tenant_with_a_service_account_writes_as_it_and_rbac_decides(tmp_path, kube):
    """Issue 27, item 2: with `serviceAccount`, a tenant's objects go to the API server as
    that account (Impersonate-User), so its RBAC is the final word: a namespace the account
    may not write fails that bundle with `forbidden` naming the account; nothing else of the
    pass is affected. (The emulator holds an allow-list per user; tests/e2e proves it on
    Karmada's real RBAC.)"""
    if kube.emulator is None:
        pytest.skip("the allow-list is the emulator's; tests/e2e/test_tenants_on_karmada.py "
                    "runs this against Karmada's RBAC")
    pay, extra, ops = kube.ns("pay"), kube.ns("pay-x"), kube.ns("ops")
    user = "system:serviceaccount:gitgate-tenants:payments"
    kube.emulator.state.grants = {user: {pay}}
    root = shared_repo(tmp_path, kube.run_id, pay, ops, {
        "apps/payments/more/bundle.yaml": f"name: {kube.run_id}-more\ndependsOn: "
                                          f"[{kube.run_id}-ns]\n",
        "apps/payments/more/cm.yaml": cm("more", extra),
        "platform/ns/ns.yaml": "".join(
            f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
            for n in (pay, ops, extra))})
    config = (root / "gitgate.yaml").read_text().replace(
        f'namespaces: ["{pay}"]', f'namespaces: ["{pay}", "{extra}"]') + \
        "    serviceAccount: {namespace: gitgate-tenants, name: payments}\n"
    (root / "gitgate.yaml").write_text(config)
    applied = gitgate("apply", str(root), "--kubeconfig", kube.kubeconfig, "--instance",
                      kube.run_id, "-o", "json")
    results = {b["name"]: b for b in json.loads(applied.stdout)["bundles"]}
    more = results[f"{kube.run_id}-more"]
    assert more["failed"] and more["reason"] == "Forbidden", more
    assert user in more["message"]
    assert not results[f"{kube.run_id}-api"]["failed"]  # its namespace is granted
    assert not results[f"{kube.run_id}-ops"]["failed"]  # the platform's, as gitgate
    assert kube.cluster.get("v1", "ConfigMap", pay, "api") is not None
    assert kube.cluster.get("v1", "ConfigMap", extra, "more") is None
    sent_as = {r.path.rsplit("/", 1)[-1]: r.impersonated
               for r in kube.emulator.state.requests if r.method == "PATCH"}
    assert sent_as["api"] == user  # the tenant's object, as the tenant
    assert sent_as["ops"] == ""  # the platform's, as gitgate
    records = {r.impersonated for r in kube.emulator.state.requests
               if r.method == "PATCH" and f"/bundles/{kube.run_id}.{kube.run_id}-api" in r.path}
    assert records == {""}  # gitgate's own state (the Bundle and its status), as gitgate


def test_a_tenant_whose_clusters_are_chosen_by_labels(tmp_path, emulator):
    """`clusters: {labelSelector}`: the member clusters a tenant's bundle names are judged by
    the labels Karmada's Clusters carry at each pass (a relabelled cluster stops taking the
    tenant's bundle); a placement by labels passes only when it implies the tenant's selector;
    a plan without the cluster says what it could not judge."""
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    cluster = KubeCluster(load_client(kubeconfig))
    for name, team in (("member1", "payments"), ("member2", "billing")):
        cluster.apply({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                       "metadata": {"name": name, "labels": {"team": team}},
                       "spec": {"syncMode": "Push"}})
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": """
            tenants:
              - name: payments
                paths: ["apps/payments/**"]
                namespaces: ["pay"]
                clusters: {labelSelector: {matchLabels: {team: payments}}}
            """,
        "apps/payments/ns/bundle.yaml": "name: ns\nplacement: none\n",
        "apps/payments/ns/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: pay}\n",
        "apps/payments/named/bundle.yaml": "name: named\ndependsOn: [ns]\nplacement: "
                                           "{clusterAffinity: {clusterNames: [member1]}}\n",
        "apps/payments/named/cm.yaml": cm("named", "pay"),
        "apps/payments/labelled/bundle.yaml": (
            "name: labelled\ndependsOn: [ns]\nplacement: {clusterAffinity: {labelSelector: "
            "{matchLabels: {team: payments, tier: web}}}}\n"),
        "apps/payments/labelled/cm.yaml": cm("labelled", "pay"),
        "apps/payments/wide/bundle.yaml": "name: wide\ndependsOn: [ns]\nplacement: "
                                          "{clusterAffinity: {clusterNames: [member1, member2]}}\n",
        "apps/payments/wide/cm.yaml": cm("wide", "pay"),
    })
    offline = gitgate("plan", str(root))
    assert "tenant payments places only on clusters labelled team=payments: the member " \
           "clusters its bundles name are checked against their labels in the loop" in \
           offline.stderr + offline.stdout

    flags = ["--kubeconfig", kubeconfig]
    applied = gitgate("apply", str(root), *flags, "-o", "json")
    results = {b["name"]: b for b in json.loads(applied.stdout)["bundles"]}
    assert results["wide"]["reason"] == "OutsideTenant"
    assert "names member2: tenant payments may place only on clusters labelled " \
           "team=payments" in results["wide"]["message"]
    assert not results["named"]["failed"] and not results["labelled"]["failed"]
    assert cluster.get("v1", "ConfigMap", "pay", "wide") is None
    assert cluster.get("v1", "ConfigMap", "pay", "named") is not None

    cluster.apply({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                   "metadata": {"name": "member1", "labels": {"team": "billing"}},
                   "spec": {"syncMode": "Push"}})
    write_files(root, {"apps/payments/named/cm.yaml": cm("named", "pay").replace(
        "}\n", "}\ndata: {v: '2'}\n")})
    again = {b["name"]: b for b in json.loads(
        gitgate("apply", str(root), *flags, "-o", "json").stdout)["bundles"]}
    assert again["named"]["reason"] == "OutsideTenant"  # member1 is billing's now
    assert "data" not in cluster.get("v1", "ConfigMap", "pay", "named")  # nothing written
    assert not again["labelled"]["failed"]  # its selector implies the tenant's, whoever joins
