"""The deploy/ kustomize base builds with the real kustomize and says what the README says."""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import textwrap

import pytest

from gitgate.yamlio import load_documents
from tests.conftest import REPO_ROOT, committed_repo

pytestmark = pytest.mark.integration


def test_deploy_base_runs_two_hardened_replicas_with_karmadas_kubeconfig(tools):
    out = subprocess.run([*tools.kustomize, str(REPO_ROOT / "deploy")], capture_output=True,
                         text=True, check=True).stdout
    objects = {(d.data["kind"], d.data["metadata"]["name"]): d.data
               for d in load_documents(out)}
    assert all(o["metadata"]["namespace"] == "karmada-system" for o in objects.values())
    deployment = objects[("Deployment", "gitgate")]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert set(container["resources"]) == {"requests", "limits"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["karmada-kubeconfig"]["secret"]["secretName"] == "karmada-kubeconfig"
    assert "--kubeconfig=/etc/karmada/kubeconfig" in container["args"]
    assert "--shard" in container["args"]  # both replicas reconcile, none stands idle
    budget = objects[("PodDisruptionBudget", "gitgate")]
    assert budget["spec"]["minAvailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"].items() <= \
        deployment["spec"]["template"]["metadata"]["labels"].items()
    service = objects[("Service", "gitgate")]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert ("Secret", "gitgate-git") in objects and ("Secret", "gitgate-webhook") in objects


def test_ci_examples_are_valid_workflows_that_run_gitgate():
    from gitgate.yamlio import load_one

    check = load_one((REPO_ROOT / "examples/ci/gitgate-check.yml").read_text())
    assert "pull_request" in check["on"]
    steps = " ".join(s.get("run", "") for s in check["jobs"]["check"]["steps"])
    assert "gitgate check . --junit" in steps
    assert "GITHUB_STEP_SUMMARY" in steps and check["permissions"] == {"contents": "read"}
    pause = load_one((REPO_ROOT / "examples/ci/gitgate-pause.yml").read_text())
    assert "workflow_dispatch" in pause["on"]
    script = pause["jobs"]["gate"]["steps"][-1]["run"]
    assert "--push" in script and "gitgate resume" in script
    assert "${{" not in script  # inputs reach the shell as variables only
    assert pause["on"]["workflow_dispatch"]["inputs"]["reason"]["required"] is True
    assert pause["concurrency"]["cancel-in-progress"] is False
    assert pause["permissions"] == {"contents": "write"}


@pytest.mark.parametrize("variant, secret, key", [
    ("deploy", "karmada-kubeconfig", "kubeconfig"),
    ("deploy/variants/karmadactl-init", "karmada-controller-manager-config", "karmada.config"),
    ("deploy/variants/karmada-operator", "karmada-admin-config", "karmada.config"),
    ("deploy/variants/least-privilege", "gitgate-karmada-kubeconfig", "kubeconfig"),
])
def test_each_install_flavour_is_one_patch_of_the_kubeconfig_secret(tools, variant, secret,
                                                                    key):
    out = subprocess.run([*tools.kustomize, str(REPO_ROOT / variant)], capture_output=True,
                         text=True, check=True).stdout
    deployment = next(d.data for d in load_documents(out) if d.data["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "karmada-kubeconfig")
    assert volume["secret"] == {"secretName": secret,
                                "items": [{"key": key, "path": "kubeconfig"}]}
    assert "--kubeconfig=/etc/karmada/kubeconfig" in pod["containers"][0]["args"]


def crd_in_deploy() -> dict:
    [crd] = [d.data for d in load_documents(
        (REPO_ROOT / "deploy/crds/bundles.gitgate.io.yaml").read_text())]
    return crd


def test_the_bundle_crd_in_deploy_is_the_one_gitgate_creates():
    from gitgate.apply.recordcrd import bundle_crd

    assert crd_in_deploy() == bundle_crd()
    kustomization = (REPO_ROOT / "deploy/karmada-rbac/kustomization.yaml").read_text()
    assert "../crds" in kustomization


def rbac_grants() -> set[tuple[str, str, str, str]]:
    """The (verb, group, resource, namespace or *) pairs deploy/karmada-rbac grants."""
    documents = [d.data for d in load_documents(
        (REPO_ROOT / "deploy/karmada-rbac/rbac.yaml").read_text())]
    grants = set()
    for role in documents:
        if role["kind"] not in ("ClusterRole", "Role"):
            continue
        where = role["metadata"].get("namespace", "*")
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        grants.add((verb, group, resource, where))
    return grants


def test_the_least_privilege_role_is_enough_for_what_gitgate_does(tmp_path, tools, capsys):
    """Over the emulator with RBAC limited to deploy/karmada-rbac's rules: apply, a second
    pass, status, pause --clusters and the leader Lease all work; a kind the role leaves out
    fails only its bundle, naming the verb and resource."""

    from gitgate.apiserver.lease import LeaseElector
    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    from gitgate.apply.inventory import NAMESPACE
    from gitgate.cli import main
    from gitgate.passes.shards import Membership
    from tests.conftest import write_files
    from tests.kubeapi.server import KubeApiEmulator
    from tests.support.manifests import cm, deployment

    with KubeApiEmulator() as emulator:
        kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
        admin = KubeCluster(load_client(kubeconfig))
        admin.apply({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                     "metadata": {"name": "member1"}})
        admin.apply(crd_in_deploy())  # an admin installs deploy/crds with karmada-rbac
        assert admin.wait_established(["bundles.gitgate.io"]) == []
        emulator.state.allowed = rbac_grants()
        root = write_files(tmp_path / "repo", {
            "gitgate.yaml": "defaults: {placement: {clusterAffinity: "
                            "{clusterNames: [member1]}}}\n",
            "shop/bundle.yaml": "name: shop\n",
            "shop/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
            "shop/app.yaml": deployment("web", "shop", config="web") + cm("web", "shop")
            + textwrap.dedent("""
                ---
                apiVersion: v1
                kind: ServiceAccount
                metadata: {name: web, namespace: shop}
                ---
                apiVersion: v1
                kind: Service
                metadata: {name: web, namespace: shop}
                spec: {selector: {app: web}, ports: [{port: 80}]}
            """),
            "extra/bundle.yaml": "name: extra\n",
            "extra/role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n"
                               "metadata: {name: reader, namespace: shop}\nrules: []\n",
        })
        flags = ["--kubeconfig", kubeconfig]
        capsys.readouterr()
        assert main(["apply", str(root), *flags, "-o", "json"]) == 1
        bundles = {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}
        assert bundles["shop"]["verdict"] == "apply" and not bundles["shop"]["failed"]
        # gitgate reads whose instance an object is before writing it: that read is refused
        assert ("forbidden: get roles.rbac.authorization.k8s.io reader in namespace shop"
                in bundles["extra"]["message"])
        assert main(["apply", str(root), *flags]) == 1  # the second pass reads and compares
        assert main(["status", *flags]) == 0
        assert "shop" in capsys.readouterr().out

        committed_repo(root)
        assert main(["pause", "shop", "--reason", "move", "--action", "suspend",
                     "--clusters", "member1", "--repo", str(root), *flags]) == 0

        elector = LeaseElector(load_client(kubeconfig), NAMESPACE, "gitgate-rbac", "a",
                               lease_duration=3, renew_deadline=2, retry_period=1).start()
        deadline = __import__("time").monotonic() + 10
        while not elector.is_leader() and __import__("time").monotonic() < deadline:
            __import__("time").sleep(0.1)
        assert elector.is_leader()
        elector.stop()
        shards = Membership(KubeCluster(load_client(kubeconfig)), "rbac", "r1",
                            lease_duration=6, renew_deadline=4, retry_period=1)
        assert shards.renew() and shards.turn().acting  # its Lease, the others', the record
        shards.stop()
        assert shards.replicas() == []  # its Lease handed back
        forbidden = [r for r in emulator.state.requests if r.path.endswith("/roles/reader")]
        assert forbidden  # the only refusal was the Role the role leaves out


def earlier_crd() -> dict:
    """The Bundle CRD as an earlier gitgate wrote it: no `spec.digest`, no fingerprint."""
    crd = copy.deepcopy(crd_in_deploy())
    del crd["metadata"]["annotations"]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    del schema["properties"]["spec"]["properties"]["digest"]
    return crd


@pytest.mark.parametrize("may_update", [True, False])
def test_an_earlier_bundle_crd_is_updated_where_gitgate_may_and_said_where_not(
        tmp_path, caplog, may_update):
    """A gitgate upgrade over a CRD an earlier one installed: with the rights to, gitgate
    brings it to its own schema; with the least-privilege role it says what to apply, and
    the pass goes on with the older schema."""
    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    from gitgate.apply.recordcrd import CRD_NAME, crd_current
    from gitgate.cli import main
    from tests.conftest import write_files
    from tests.kubeapi.server import KubeApiEmulator
    from tests.support.manifests import cm

    with KubeApiEmulator() as emulator:
        kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
        admin = KubeCluster(load_client(kubeconfig))
        admin.apply(earlier_crd())
        assert admin.wait_established([CRD_NAME]) == []
        if not may_update:
            emulator.state.allowed = rbac_grants()
        root = write_files(tmp_path / "repo", {
            "shop/bundle.yaml": "name: shop\nplacement: none\n",
            "shop/app.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"
                             + cm("web", "shop")})
        with caplog.at_level(logging.WARNING, logger="gitgate"):
            assert main(["apply", str(root), "--kubeconfig", kubeconfig]) == 0
        installed = admin.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                              CRD_NAME)
        said = [r.getMessage() for r in caplog.records if "CustomResourceDefinition" in
                r.getMessage()]
        assert crd_current(installed) is may_update
        if may_update:
            assert said == []
        else:
            assert len(said) == 1 and "apply deploy/crds/ as an admin" in said[0]
        assert admin.get("gitgate.io/v1alpha1", "Bundle", "gitgate-system", "shop") is not None
