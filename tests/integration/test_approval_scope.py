"""An approval covers exactly what goes out: a digest approved under a hold lets that content
through and nothing else, whichever file outside the bundle's folder (a values file in a
shared folder, reached through a link) changes it after. Through the real CLI against the
API emulator."""

from __future__ import annotations

import json

import pytest

from gitgate.cli import main
from tests.conftest import write_files
from tests.support.manifests import api_chart

pytestmark = pytest.mark.integration

PLACEMENT = "defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"


def run(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_an_approval_does_not_cover_a_shared_values_file_changed_after_it(
        tmp_path, kube, capsys, tools):
    ns = kube.ns("appr")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id, "-o", "json"]
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT + "paths: [ns, apps]\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        **api_chart("apps/api", "1.0"),
        "apps/api/bundle.yaml": f"namespace: {ns}\nvaluesFiles: [shared.yaml]\n",
        "shared/api.yaml": "image: {tag: '1.0'}\n",
    })
    (root / "apps/api/shared.yaml").symlink_to("../../shared/api.yaml")
    assert run(capsys, "apply", str(root), *flags)[0] == 0
    write_files(root, {"shared/api.yaml": "image: {tag: '1.1'}\n"})
    code, doc = run(capsys, "plan", str(root), "-o", "json")
    digest = {b["name"]: b for b in doc["bundles"]}["apps-api"]["digest"]
    write_files(root, {"gates/freeze.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        f"spec: {{bundles: [apps-api], reason: freeze, approve: {{bundle: apps-api, "
        f"digest: '{digest}'}}}}\n")})
    assert run(capsys, "apply", str(root), *flags)[0] == 0
    image = kube.cluster.get("apps/v1", "Deployment", ns, "api")["spec"]["template"]["spec"][
        "containers"][0]["image"]
    assert image == "nginx:1.1"  # the approved content went out
    # the shared values file changes after the approval: held again, nothing written
    write_files(root, {"shared/api.yaml": "image: {tag: '6.6.6'}\n"})
    code, doc = run(capsys, "apply", str(root), *flags)
    assert {b["name"]: b for b in doc["bundles"]}["apps-api"]["verdict"] == "held", doc
    image = kube.cluster.get("apps/v1", "Deployment", ns, "api")["spec"]["template"]["spec"][
        "containers"][0]["image"]
    assert image == "nginx:1.1"
