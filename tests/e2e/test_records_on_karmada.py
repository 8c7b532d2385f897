"""gitgate's state where Kubernetes users look (issue 29), on a real Karmada: `kubectl get
bundles.gitgate.io` shows the printer columns (CLUSTERS written by a running loop's
observer); `kubectl describe` lists the events of an apply, a hold and a halted wave;
`gitgate reconcile BUNDLE --wait` reaches a running loop through the API server alone; a
rollback of a bad image returns both members to the previous one."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.karmada import Run, gitgate, stays, wait_for
from tests.support.karmadarun import app_files, with_namespaces

pytestmark = pytest.mark.e2e
KUBECTL = shutil.which("kubectl") or "/tmp/karmada-assets/kubectl"


def kubectl(run: Run, *args: str) -> str:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed: the view `kubectl get` gives is what is tested")
    done = subprocess.run([KUBECTL, "--kubeconfig", str(run.karmada.kubeconfig), *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def record_name(run: Run, name: str) -> str:
    return f"{run.run_id}.{run.bundle(name)}"


def test_kubectl_views_reconcile_through_the_api_and_a_rollback(run, karmada, tmp_path):
    ns = run.ns("web")
    good = run.repo.commit({**with_namespaces(run, "web"),
                            **app_files(run, "web", "nginx:1.0", "a")}, "web at 1.0")
    loop = run.start_loop(tmp_path / "cache", "--interval", "1h", "--status-interval", "1s")
    try:
        wait_for(lambda: karmada.image("member2", ns, "web") == "nginx:1.0", timeout=90,
                 message="both members run 1.0")
        karmada.make_healthy("member1", ns, "web")
        karmada.make_healthy("member2", ns, "web")
        name = record_name(run, "web")
        wait_for(lambda: "2/2" in kubectl(run, "get", "bundles.gitgate.io", "-n",
                                          "gitgate-system", name), timeout=60,
                 message="the observer wrote CLUSTERS 2/2")
        table = kubectl(run, "get", "bundles.gitgate.io", "-A").splitlines()
        assert table[0].split() == ["NAMESPACE", "NAME", "VERDICT", "READY", "CLUSTERS",
                                    "REVISION", "AGE"]
        row = next(line.split() for line in table if name in line)
        assert row[2:6] == ["apply", "True", "2/2", good[:12]]

        # a new commit, and the loop (interval 1h) asked through the API alone
        bad = run.repo.commit(app_files(run, "web", "nginx:9.9-broken", "a"), "broken image")
        started = time.monotonic()
        asked = gitgate("reconcile", run.bundle("web"), "--kubeconfig",
                        str(run.karmada.kubeconfig), "--instance", run.run_id, "--wait",
                        "--timeout", "60s")
        took = time.monotonic() - started
        assert asked.returncode == 0, asked.stdout + asked.stderr
        assert f"{run.bundle('web')}: apply at {bad[:12]}" in asked.stdout
        print(f"reconcile --wait took {took:.1f}s")  # the issue asks for under 5 s
        assert took < 15  # generous on 2 busy cores; the figure is printed above
        wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:9.9-broken",
                 message="member1 runs the broken image")

        # rollback: one commit; the loop, asked again, returns both members to 1.0
        rolled = gitgate("rollback", run.bundle("web"), "--repo", str(run.repo.root),
                         "--kubeconfig", str(run.karmada.kubeconfig), "--instance", run.run_id)
        assert rolled.returncode == 0, rolled.stderr
        assert f"as of {good[:12]}" in rolled.stdout
        again = gitgate("reconcile", run.bundle("web"), "--kubeconfig",
                        str(run.karmada.kubeconfig), "--instance", run.run_id, "--wait",
                        "--timeout", "60s")
        assert again.returncode == 0, again.stdout + again.stderr
        for member in ("member1", "member2"):
            wait_for(lambda m=member: karmada.image(m, ns, "web") == "nginx:1.0",
                     message=f"{member} back on 1.0")

        # a hold, then kubectl describe lists the apply and the hold
        run.repo.commit({"gates/freeze.yaml": (
            "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
            f"spec: {{bundles: [{run.bundle('web')}], reason: INC-77 freeze}}\n"),
            **app_files(run, "web", "nginx:1.1", "a")}, "freeze")
        gitgate("reconcile", run.bundle("web"), "--kubeconfig", str(run.karmada.kubeconfig),
                "--instance", run.run_id, "--wait", "--timeout", "60s")
        described = kubectl(run, "describe", "bundles.gitgate.io", "-n", "gitgate-system", name)
        events = described[described.index("Events:"):]
        assert "Applied" in events and "Held" in events and "INC-77 freeze" in events
        assert karmada.image("member1", ns, "web") == "nginx:1.0"  # held: nothing went out
    finally:
        log = run.stop_loop(loop)
    assert "Traceback" not in log, log[-3000:]


def test_kubectl_describe_shows_a_halted_wave(run, karmada):
    rollout = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 1s, "
               "progressDeadline: 3s}\n")
    files = app_files(run, "web", "nginx:1.0", "a")
    files["web/bundle.yaml"] += rollout
    run.repo.commit({**with_namespaces(run, "web"), **files}, "web, in waves")
    run.apply()
    time.sleep(4)  # member1 never becomes healthy: past the wave's progressDeadline
    wait_for(lambda: run.result(run.apply(), "web")["verdict"] == "halted", timeout=60,
             message="the rollout halts")
    described = kubectl(run, "describe", "bundles.gitgate.io", "-n", "gitgate-system",
                        record_name(run, "web"))
    events = described[described.index("Events:"):]
    assert "RolloutHalted" in events and "halted at wave 1" in events
    record = json.loads(kubectl(run, "get", "bundles.gitgate.io", "-n", "gitgate-system",
                                record_name(run, "web"), "-o", "json"))
    conditions = {c["type"]: c for c in record["status"]["conditions"]}
    assert conditions["Stalled"]["status"] == "True"
    assert conditions["Ready"]["reason"] == "RolloutHalted"


def test_a_bundle_record_is_no_template_a_policy_can_take(run, karmada):
    """Karmada's detector takes any object of a kind it does not skip for a resource template;
    one that no policy claims waits on a list every new policy reads object by object. A
    Bundle record carries Karmada's claimed-by label: a policy selecting it by name binds
    nothing, where the same policy binds a Bundle without the label (the control, so the
    test cannot pass because the policy or the detector does nothing)."""
    from gitgate.apply.inventory import NAMESPACE
    from gitgate.apply.recordformat import API_VERSION, CLAIMED_LABEL, KIND

    run.repo.commit({**with_namespaces(run, "web"), **app_files(run, "web", "nginx:1.0", "a")},
                    "web")
    run.apply()
    record = record_name(run, "web")
    assert CLAIMED_LABEL in karmada.api.get(API_VERSION, KIND, NAMESPACE, record)[
        "metadata"]["labels"]
    control = f"{run.run_id}.control"
    policy = f"{run.run_id}-takes-records"
    karmada.api.apply({"apiVersion": API_VERSION, "kind": KIND, "metadata": {
        "name": control, "namespace": NAMESPACE,
        "labels": {"gitgate.io/instance": run.run_id}},
        "spec": {"bundle": "control", "instance": run.run_id}})
    try:
        karmada.api.apply({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": policy, "namespace": NAMESPACE},
            "spec": {"resourceSelectors": [
                {"apiVersion": API_VERSION, "kind": KIND, "name": name}
                for name in (record, control)],
                "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}})

        def binding(name: str) -> dict | None:
            return karmada.api.get("work.karmada.io/v1alpha2", "ResourceBinding", NAMESPACE,
                                   f"{name}-{KIND}".lower())

        wait_for(lambda: binding(control) is not None, timeout=120)  # Karmada takes a Bundle
        assert stays(lambda: binding(record) is None, 10) == []
    finally:
        karmada.api.delete("policy.karmada.io/v1alpha1", "PropagationPolicy", NAMESPACE, policy)
        karmada.api.delete(API_VERSION, KIND, NAMESPACE, control)
