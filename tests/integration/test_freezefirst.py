"""A committed suspension lands before the renders finish (issue 24, item 11): a chart whose
render never ends until the test lets it cannot hold back the suspension of another bundle.
Deterministic: helm is a wrapper that waits for a file the test writes only after it saw the
suspension on the live policy. Runs against the emulator, or a real Karmada with
GITGATE_TEST_KUBECONFIG (which shows managedFields as a real API server writes them)."""

from __future__ import annotations

import stat
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitgate.apply.work import ApplyOptions
from gitgate.karmada.policy import policy_name
from gitgate.passes.onepass import reconcile
from tests.conftest import write_files

pytestmark = pytest.mark.integration


def gated_helm(tmp_path: Path, real_helm: str, gate_file: Path) -> str:
    """A helm that renders only once `gate_file` exists (a render as slow as the test wants)."""
    wrapper = tmp_path / "slow-helm"
    wrapper.write_text(f"#!/bin/sh\nwhile [ ! -e '{gate_file}' ]; do sleep 0.1; done\n"
                       f"exec '{real_helm}' \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


def test_a_suspend_gate_lands_while_a_render_is_still_running(tmp_path, kube, tools):
    ns = kube.ns("web")
    web = f"{kube.run_id}-web"
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: "
                        "[member1, member2]}}}\n",
        "web/bundle.yaml": f"name: {web}\n",
        "web/app.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n"
                        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web, "
                        f"namespace: {ns}}}\ndata: {{v: '1'}}\n",
        "slow/bundle.yaml": f"name: {kube.run_id}-slow\nnamespace: {ns}\n",
        "slow/Chart.yaml": "apiVersion: v2\nname: slow\nversion: 0.1.0\n",
        "slow/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow}\n",
    })
    go = tmp_path / "render-may-finish"
    go.touch()
    slow_tools = replace(tools, helm=gated_helm(tmp_path, tools.helm, go))
    options = ApplyOptions(now=datetime.now(UTC), instance=kube.run_id)
    first = reconcile(root, slow_tools, kube.cluster, options).result
    assert first is not None
    assert not any(b.failed for b in first.bundles), [(b.bundle, b.message)
                                                      for b in first.bundles]

    def live_suspension() -> dict | None:
        policy = kube.cluster.get("policy.karmada.io/v1alpha1", "PropagationPolicy", ns,
                                  policy_name(web, kube.run_id))
        return ((policy or {}).get("spec") or {}).get("suspension")

    assert live_suspension() is None
    go.unlink()  # from now on every helm render waits
    write_files(root, {"gates/freeze.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        f"spec: {{bundles: ['{web}'], action: suspend, clusters: [member2], "
        "reason: INC-7 bad config}\n")})
    results: list = []
    passing = threading.Thread(target=lambda: results.append(reconcile(
        root, slow_tools, kube.cluster, replace(options, now=datetime.now(UTC)))))
    passing.start()
    try:
        deadline = time.monotonic() + 60
        while live_suspension() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live_suspension() == {"dispatchingOnClusters": {"clusterNames": ["member2"]}}
        assert passing.is_alive()  # the render is still waiting: the suspension came first
        policy = kube.cluster.get("policy.karmada.io/v1alpha1", "PropagationPolicy", ns,
                                  policy_name(web, kube.run_id))
        selectors = policy["spec"]["resourceSelectors"]  # gitgate's other fields are kept
        assert {s["kind"] for s in selectors} == {"ConfigMap"}
        assert policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] == [
            "member1", "member2"]
    finally:
        go.touch()
        passing.join(120)
    second = results[0].result
    assert len(results) == 1 and second is not None
    verdicts = {b.bundle: b for b in second.bundles}
    assert verdicts[web].verdict == "suspended" and not verdicts[web].failed
    assert live_suspension() == {"dispatchingOnClusters": {"clusterNames": ["member2"]}}
    (root / "gates" / "freeze.yaml").unlink()  # lifted: the pass takes the suspension away
    third = reconcile(root, slow_tools, kube.cluster,
                      replace(options, now=datetime.now(UTC))).result
    assert third is not None
    assert not any(b.failed for b in third.bundles)
    assert live_suspension() is None


@pytest.mark.parametrize("gates_path", ["gates", "ops/gates"])
def test_the_quick_look_at_the_gates_sees_what_a_full_scan_sees(tmp_path, gates_path):
    """The step before rendering scans only gitgate.yaml and the gates folder: a gate file, a
    hidden draft, a link out, a symlinked sub-folder and a non-gate file are found alike (each
    of the last four holds everything)."""
    import os

    from gitgate.source.tree import gate_texts, scan_repo

    root = write_files(tmp_path / "repo", {
        f"{gates_path}/a.yaml": "k: v\n", f"{gates_path}/.drafts/b.yaml": "k: v\n",
        f"{gates_path}/notes.txt": "x\n", "apps/web/cm.yaml": "k: v\n"})
    os.symlink("/etc", root / gates_path / "out")
    os.symlink(root / "apps", root / gates_path / "linked")
    full = gate_texts(scan_repo(root), gates_path)
    quick = gate_texts(scan_repo(root, (gates_path,)), gates_path)
    assert sorted(quick) == sorted(full) and len(full) == 5
    assert {k: type(v).__name__ for k, v in quick.items()} == {
        k: type(v).__name__ for k, v in full.items()}
