"""The deploy/ kustomize base builds with the real kustomize and says what the README says."""

from __future__ import annotations

import subprocess

import pytest

from gitgate.yamlio import load_documents
from tests.conftest import REPO_ROOT

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
    pause = load_one((REPO_ROOT / "examples/ci/gitgate-pause.yml").read_text())
    assert "workflow_dispatch" in pause["on"]
    script = pause["jobs"]["gate"]["steps"][-1]["run"]
    assert "--push" in script and "gitgate resume" in script
    assert "${{" not in script  # inputs reach the shell as variables only
    assert pause["on"]["workflow_dispatch"]["inputs"]["reason"]["required"] is True
    assert pause["concurrency"]["cancel-in-progress"] is False
    assert pause["permissions"] == {"contents": "write"}
