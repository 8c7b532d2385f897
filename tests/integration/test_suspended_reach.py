"""A cluster a bundle is suspended on gets nothing that changes what runs of that bundle
there: the ConfigMaps, Secrets and other objects its workloads use wait with it even when
another (open) bundle has them, whether the suspension names the bundle or is known from its
record. Through the real CLI against the API emulator's request log."""

from __future__ import annotations

import json

import pytest

from gitgate.cli import main
from tests.conftest import write_files
from tests.support.applyrepo import PLACEMENT
from tests.support.applyrepo import apply_cli as apply
from tests.support.manifests import cm, deployment

pytestmark = pytest.mark.integration



@pytest.fixture(autouse=True)
def emulated(kube):
    if kube.emulator is None:
        pytest.skip("reads the API emulator's request log (GITGATE_TEST_KUBECONFIG is set)")



def gate(name: str, spec: str) -> dict[str, str]:
    return {f"gates/{name}.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                                  f"metadata: {{name: {name}}}\nspec: {spec}\n"}


def writes(kube, fragment: str) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in kube.emulator.state.requests
            if r.is_write and fragment in r.path]


@pytest.fixture
def web_and_config(tmp_path, kube, capsys):
    """apps/web: a Deployment using ConfigMap web-config, which apps/config has."""
    ns = kube.ns("sus")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/web/app.yaml": deployment("web", ns, "web:1"),
        "apps/config/app.yaml": cm("web-config", ns, "v1") + cm("other", ns, "v1"),
    })
    code, doc = apply(capsys, kube, root)
    assert code == 0, doc
    return root, ns


@pytest.mark.parametrize("change", ["edited", "dropped"])
def test_what_a_suspended_workload_uses_waits_with_it(web_and_config, kube, capsys, change):
    root, ns = web_and_config
    write_files(root, gate("web", "{bundles: [apps-web], action: suspend, clusters: [member2], "
                                  "reason: member2 maintenance}"))
    code, doc = apply(capsys, kube, root)
    assert {b["name"]: b["verdict"] for b in doc["bundles"]}["apps-web"] == "suspended", doc
    if change == "edited":
        write_files(root, {"apps/config/app.yaml": cm("web-config", ns, "v2")
                           + cm("other", ns, "v2")})
    else:
        write_files(root, {"apps/config/app.yaml": cm("other", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    bundles = {b["name"]: b for b in doc["bundles"]}
    assert writes(kube, "/configmaps/web-config") == [], bundles["apps-config"]
    assert kube.cluster.get("v1", "ConfigMap", ns, "web-config")["data"]["value"] == "v1"
    assert writes(kube, "/configmaps/other"), bundles["apps-config"]  # the rest goes out


def suspension(kube, ns: str, bundle: str):
    from gitgate.karmada.policy import policy_name
    for kind, where in (("PropagationPolicy", ns), ("ClusterPropagationPolicy", "")):
        policy = kube.cluster.get("policy.karmada.io/v1alpha1", kind, where,
                                  policy_name(bundle, kube.run_id))
        if policy is not None:
            return policy["spec"].get("suspension")
    return None


@pytest.mark.parametrize("named", [["membr2"], ["member2", "member-3"]])
def test_a_suspension_naming_no_member_cluster_suspends_every_cluster(
        web_and_config, kube, capsys, named):
    """A careless `clusters: [membr2]`: Karmada has no such cluster, so the suspension as
    written stops nothing, while `status` would say suspended. It suspends the bundle on
    every cluster instead, and says which name is no member."""
    root, ns = web_and_config
    for member in ("member1", "member2"):  # Karmada's members, as the harness has them
        kube.cluster.apply({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                            "metadata": {"name": member}, "spec": {"syncMode": "Push"}})
    write_files(root, {**gate("web", f"{{bundles: [apps-web], action: suspend, clusters: "
                                     f"[{', '.join(named)}], reason: member2 maintenance}}"),
                       "apps/web/app.yaml": deployment("web", ns, "web:2")})
    code, doc = apply(capsys, kube, root)
    web = {b["name"]: b for b in doc["bundles"]}["apps-web"]
    assert web["verdict"] == "suspended", web
    assert suspension(kube, ns, "apps-web") == {"dispatching": True}, web
    capsys.readouterr()
    assert main(["status", "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id,
                 "-o", "json"]) == 0
    said = json.dumps([b for b in json.loads(capsys.readouterr().out)["bundles"]
                       if b["name"] == "apps-web"])
    unknown = [n for n in named if n.startswith(("membr", "member-"))]
    assert all(n in said for n in unknown), said
    assert "not a member cluster" in said, said
