"""Issue 28, item 2: with `gitgate.yaml` holding only `defaults: {namespace: x}`, `check` said
"8 of 8 checks ok", `plan` showed POLICIES 0 without a word and `apply` said ok: nothing
reached a member cluster. A bundle that reaches none is a warning in `plan` and `apply`, a
failed case in `check`, unless it says `placement: none`. The real CLI, in subprocesses."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: v}}\n"


def repo(tmp_path, config: str, extra: dict[str, str] | None = None):
    return write_files(tmp_path / "repo", {
        "gitgate.yaml": config,
        "web/cm.yaml": CM.format(name="web"),
        "ops/bundle.yaml": "placement: none\n",  # stays on the control plane on purpose
        "ops/cm.yaml": CM.format(name="ops"),
        "ns/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
        **(extra or {})})


def test_check_fails_plan_and_apply_warn_for_a_bundle_nothing_places(tmp_path, kube):
    root = repo(tmp_path, "defaults: {namespace: x}\n")
    check = gitgate("check", str(root), "-o", "json")
    assert check.returncode == 1, check.stdout + check.stderr
    failed = {c["name"]: c for c in json.loads(check.stdout)["cases"] if c["failures"]}
    assert set(failed) == {"web"}  # ops says placement: none, ns holds only a Namespace
    assert failed["web"]["failures"][0]["type"] == "NotPlaced"
    assert "web/bundle.yaml" in failed["web"]["failures"][0]["message"]

    plan = gitgate("plan", str(root))
    assert plan.returncode == 0
    warned = [line for line in plan.stdout.splitlines() if "reaches no member cluster" in line]
    assert len(warned) == 1 and "bundle web reaches no member cluster" in warned[0]
    assert warned[0].startswith("warning: web/bundle.yaml")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    applied = gitgate("apply", str(root), *flags)
    assert "warning: web/bundle.yaml: bundle web reaches no member cluster" in applied.stderr


def test_a_placement_from_the_defaults_places_every_bundle(tmp_path):
    root = repo(tmp_path, "defaults: {namespace: x, placement: {clusterAffinity: "
                          "{clusterNames: [member1]}}}\n")
    check = gitgate("check", str(root))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "reaches no member cluster" not in gitgate("plan", str(root)).stdout
