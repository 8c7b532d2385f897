"""Rollback is a commit (issue 29, item 5), through the real CLI and real git: the bundle's
folder as an earlier revision had it (files added since removed), by default the last
revision its history records as applied before the live one; with `--hold` a gate in the
same commit lets exactly that content through and holds anything newer; a folder other
bundles share is refused, naming them."""

from __future__ import annotations

import json
import subprocess

import pytest

from gitgate.apply.inventory import NAMESPACE
from gitgate.apply.recordformat import API_VERSION, KIND, bundle_name
from tests.conftest import set_identity, write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration


def deployment(name: str, ns: str, image: str) -> str:
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: "
            f"{ns}}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n"
            f"    metadata: {{labels: {{app: {name}}}}}\n    spec: {{containers: [{{name: app, "
            f"image: '{image}'}}]}}\n")


def commit(root, message: str) -> str:
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True,
                          capture_output=True, text=True).stdout.strip()


def image(kube, ns: str) -> str:
    live = kube.cluster.get("apps/v1", "Deployment", ns, "web")
    return live["spec"]["template"]["spec"]["containers"][0]["image"]


def test_rollback_restores_the_last_applied_folder_and_can_hold_what_is_newer(tmp_path, kube):
    import git as gitpython

    ns, run = kube.ns("shop"), kube.run_id
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
        "ns/bundle.yaml": f"name: {run}-ns\nplacement: none\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "web/bundle.yaml": f"name: {run}-web\ndependsOn: [{run}-ns]\n",
        "web/app.yaml": deployment("web", ns, "web:1")})
    set_identity(gitpython.Repo.init(root, initial_branch="main"), "Dev", "dev@example.com")
    good = commit(root, "web:1")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert gitgate("apply", str(root), *flags).returncode == 0
    write_files(root, {"web/app.yaml": deployment("web", ns, "web:2-broken"),
                       "web/extra.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: "
                                         f"{{name: extra, namespace: {ns}}}\n"})
    bad = commit(root, "web:2, broken")
    assert gitgate("apply", str(root), *flags).returncode == 0
    assert image(kube, ns) == "web:2-broken"

    done = gitgate("rollback", f"{run}-web", "--repo", str(root), *flags)
    assert done.returncode == 0, done.stderr
    assert f"restored web as of {good[:12]}" in done.stdout
    assert not (root / "web" / "extra.yaml").exists()  # added since: gone
    shown = subprocess.run(["git", "show", "--stat", "--format=%s", "HEAD"], cwd=root,
                           capture_output=True, text=True, check=True).stdout
    assert shown.startswith(f"rollback {run}-web to {good[:12]}")
    assert gitgate("apply", str(root), *flags).returncode == 0
    assert image(kube, ns) == "web:1"
    record = kube.cluster.get(API_VERSION, KIND, NAMESPACE, bundle_name(f"{run}-web", run))
    assert [h["revision"] for h in record["status"]["history"]][-3:-1] == [good, bad]

    # --hold: the restored content goes through, anything newer is held
    held = gitgate("rollback", f"{run}-web", "--to", bad, "--hold", "--repo", str(root), *flags)
    assert held.returncode == 0, held.stderr
    gate = next((root / "gates").glob("*.yaml"))
    assert "approve" in gate.read_text() and "rolled back to" in gate.read_text()
    plan = json.loads(gitgate("plan", str(root), "-o", "json").stdout)
    verdicts = {b["name"]: b["verdict"] for b in plan["bundles"]}
    assert verdicts[f"{run}-web"] == "apply"
    write_files(root, {"web/app.yaml": deployment("web", ns, "web:3")})
    commit(root, "web:3")
    plan = json.loads(gitgate("plan", str(root), "-o", "json").stdout)
    assert {b["name"]: b["verdict"] for b in plan["bundles"]}[f"{run}-web"] == "held"


def test_a_rollback_of_a_shared_folder_is_refused_naming_the_others(tmp_path):
    import git as gitpython

    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
        "shop/bundle.yaml": "split: app\n",
        "shop/apps.yaml": deployment("cart", "shop", "cart:1") + "---\n"
        + deployment("pay", "shop", "pay:1")})
    set_identity(gitpython.Repo.init(root, initial_branch="main"), "Dev", "dev@example.com")
    first = commit(root, "one")
    names = [b["name"] for b in json.loads(gitgate("plan", str(root), "-o",
                                                   "json").stdout)["bundles"]]
    assert len(names) == 2, names
    refused = gitgate("rollback", names[0], "--to", first, "--repo", str(root))
    assert refused.returncode == 2 and names[1] in refused.stderr
    assert "nothing was written" in refused.stderr
    nowhere = gitgate("rollback", names[0], "--repo", str(root))
    assert nowhere.returncode == 2 and "--to" in nowhere.stderr
