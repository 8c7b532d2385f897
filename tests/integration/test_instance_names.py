"""Two gitgate instances on one API server, each with a bundle `ns` (a namespaces folder) and
a bundle of objects in that namespace: what each generates at cluster scope carries its
instance's name, so both apply. And an instance whose generated names change (written by a
release that gave every instance the default's names): the new policies come before the old
go, and the objects stay propagated. The real CLI in a subprocess, against the emulator or a
real Karmada (GITGATE_TEST_KUBECONFIG)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitgate.apply.work import ApplyOptions
from gitgate.karmada import policy
from gitgate.passes.onepass import reconcile
from tests.conftest import REPO_ROOT, write_files
from tests.support.kubetarget import KubeTarget

pytestmark = pytest.mark.integration

POLICY_API = "policy.karmada.io/v1alpha1"
CLAIM = "propagationpolicy.karmada.io/name"  # Karmada's mark of the policy that claims a template


def gitgate(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=180, cwd=REPO_ROOT)


def repo(root: Path, ns: str) -> Path:
    """A namespaces folder (bundle `ns`) and an app in that namespace, placed on member1."""
    return write_files(root, {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
        "namespaces/bundle.yaml": "name: ns\n",
        "namespaces/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "app/bundle.yaml": "name: app\n",
        "app/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, "
                       f"namespace: {ns}}}\ndata: {{mode: one}}\n"})


def apply(root: Path, kube, instance: str) -> dict:
    done = gitgate("apply", str(root), "--kubeconfig", kube.kubeconfig, "--instance", instance,
                   "-o", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def wait_for(what, deadline: float = 90):
    """`what()` once it is truthy: Karmada's controllers act in their own time on a real
    server (the emulator at once)."""
    until = time.monotonic() + deadline
    found = what()
    while not found and time.monotonic() < until:
        time.sleep(0.5)
        found = what()
    return found


@pytest.fixture
def instances(kube):
    """Two instances of this run; their records and policies go with the test."""
    names = [f"{kube.run_id}a", f"{kube.run_id}b"]
    yield names
    for name in names:
        KubeTarget(kube.cluster, None, name).cleanup()


def test_two_instances_each_with_a_bundle_ns_both_apply(tmp_path, kube, instances):
    first, second = instances
    roots = {first: repo(tmp_path / first, kube.ns("one")),
             second: repo(tmp_path / second, kube.ns("two"))}
    for instance, root in roots.items():
        result = apply(root, kube, instance)
        failed = [(b["name"], b.get("message")) for b in result["bundles"] if b.get("failed")]
        assert failed == [], failed
    for instance, ns in ((first, kube.ns("one")), (second, kube.ns("two"))):
        cluster_policy = kube.cluster.get(POLICY_API, "ClusterPropagationPolicy", "",
                                          f"gitgate.{instance}.ns")
        assert cluster_policy is not None
        assert cluster_policy["metadata"]["labels"]["gitgate.io/instance"] == instance
        assert cluster_policy["spec"]["resourceSelectors"] == [
            {"apiVersion": "v1", "kind": "Namespace", "name": ns}]
        assert kube.cluster.get(POLICY_API, "PropagationPolicy", ns,
                                f"gitgate.{instance}.app") is not None
        assert kube.cluster.get("v1", "ConfigMap", ns, "settings")["data"] == {"mode": "one"}


def test_an_instance_whose_names_change_keeps_its_objects_propagated(tmp_path, kube,
                                                                     monkeypatch):
    """The first pass names the policies as earlier releases did for every instance
    (`gitgate-<bundle>`); the next writes `gitgate.<instance>.<bundle>` and prunes the old
    ones after. In process: the order is read from the client's log of requests."""
    ns = kube.ns("moved")
    bundle = f"{kube.run_id}-app"
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
        "app/bundle.yaml": f"name: {bundle}\n",
        "app/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "app/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, "
                       f"namespace: {ns}}}\ndata: {{mode: one}}\n"})
    legacy = policy.policy_name(bundle)  # the default instance's: `gitgate-<bundle>`
    with monkeypatch.context() as earlier:
        earlier.setattr(policy, "policy_name", lambda name, instance="": legacy)
        first = reconcile(root, None, kube.cluster,
                          ApplyOptions(now=datetime.now(UTC), instance=kube.run_id)).result
    assert first is not None and not any(b.failed for b in first.bundles), first.bundles
    assert kube.cluster.get(POLICY_API, "PropagationPolicy", ns, legacy) is not None

    def claimed_by() -> str | None:
        template = kube.cluster.get("v1", "ConfigMap", ns, "settings") or {}
        return (template["metadata"].get("annotations") or {}).get(CLAIM)

    def binding() -> dict | None:
        return kube.cluster.get("work.karmada.io/v1alpha2", "ResourceBinding", ns,
                                "settings-configmap")

    assert wait_for(lambda: claimed_by() == legacy)
    before = wait_for(lambda: (b := binding()) and b["spec"].get("clusters") and b)
    assert before["spec"]["clusters"] == [{"name": "member1"}]

    kube.cluster.forget()
    second = reconcile(root, None, kube.cluster,
                       ApplyOptions(now=datetime.now(UTC), instance=kube.run_id)).result
    assert second is not None and not any(b.failed for b in second.bundles), second.bundles
    new = policy.policy_name(bundle, kube.run_id)
    assert new == f"gitgate.{kube.run_id}.{bundle}"
    # the new policies were written before the old ones were deleted (one log of requests)
    writes = [(method, path.rsplit("/", 1)[-1]) for method, path in kube.cluster.writes()
              if "propagationpolicies" in path]
    assert writes.index(("PATCH", new)) < writes.index(("DELETE", legacy)), writes
    for kind, where in (("PropagationPolicy", ns), ("ClusterPropagationPolicy", "")):
        assert kube.cluster.get(POLICY_API, kind, where, new) is not None
        # Karmada's finalizer lets the old one go once it released what it claimed
        assert wait_for(lambda k=kind, w=where: kube.cluster.get(POLICY_API, k, w, legacy)
                        is None), (kind, kube.cluster.get(POLICY_API, kind, where, legacy))
    # Karmada hands the template to the new policy and keeps it on member1
    assert wait_for(lambda: claimed_by() == new), claimed_by()
    after = binding()
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["spec"]["clusters"] == [{"name": "member1"}]
    assert kube.cluster.get("v1", "ConfigMap", ns, "settings")["data"] == {"mode": "one"}
