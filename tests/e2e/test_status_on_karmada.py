"""What Karmada did with a bundle, per member cluster, read back by `gitgate status` and
waited for by `gitgate apply --wait`, on a real Karmada. Members run no controllers: the test
writes a member's Deployment status as its controllers would."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.e2e.karmada import Run, gate, wait_for
from tests.support.karmadarun import app_files, with_namespaces

pytestmark = pytest.mark.e2e


def states(run: Run, bundle: str, *fields: str) -> dict[str, tuple]:
    return {name: tuple(c[f] for f in fields) for name, c in run.clusters(bundle).items()}


def start_apply_wait(run: Run, timeout: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "apply", str(run.repo.root), "--kubeconfig",
         str(run.karmada.kubeconfig), "--instance", run.run_id, "--wait", "--timeout", timeout],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_status_per_cluster_and_apply_wait(run, karmada):
    ns = run.ns("web")
    first = run.repo.commit({**with_namespaces(run, "web"),
                             **app_files(run, "web", "nginx:1.0", "a")}, "web at 1.0")
    run.apply()
    fields = ("scheduled", "applied", "health", "suspended", "version")
    # both members run it; their Deployments have no controllers, so Unhealthy
    wait_for(lambda: states(run, "web", *fields) == {
        "member1": (True, True, "Unhealthy", False, "current"),
        "member2": (True, True, "Unhealthy", False, "current")},
        message="both members applied and Unhealthy")

    karmada.make_healthy("member1", ns, "web")
    wait_for(lambda: states(run, "web", "health", "version") == {
        "member1": ("Healthy", "current"), "member2": ("Unhealthy", "current")},
        message="member1 Healthy and current")

    # member2 suspended, new image: member1 current, member2 behind
    second = run.repo.commit({"gates/x.yaml": gate("x", run.bundle("web"), clusters="member2"),
                              **app_files(run, "web", "nginx:1.1", "a")}, "suspend member2, 1.1")
    assert run.result(run.apply(), "web")["verdict"] == "suspended"
    wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:1.1", message="member1 1.1")
    wait_for(lambda: states(run, "web", "suspended", "version") == {
        "member1": (False, "current"), "member2": (True, "behind")},
        message="member2 suspended and behind, member1 current")
    assert karmada.image("member2", ns, "web") == "nginx:1.0"
    # issue 28, item 3: status says which revision each member runs, and Karmada agrees
    web = run.result(run.status(), "web")
    assert (web["lastAppliedRevision"], web["lastAttemptedRevision"]) == (second, second)
    assert states(run, "web", "revision") == {"member1": (second,), "member2": (first,)}

    # apply --wait exits 0 only once member1 (not suspended) is healthy on 1.2
    run.repo.commit(app_files(run, "web", "nginx:1.2", "a"), "1.2 with member2 suspended")
    waiting = start_apply_wait(run, "90s")
    try:
        wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:1.2",
                 message="member1 1.2")
        time.sleep(5)
        assert waiting.poll() is None, "apply --wait ended before member1 was healthy"
        karmada.make_healthy("member1", ns, "web")
        out, err = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, f"{out}\n{err}"
    assert "web on member2: suspended" in err and "bundles ready" in err
    assert karmada.image("member2", ns, "web") == "nginx:1.0"

    # nobody makes member1 healthy on 1.3: exit 1 naming the cluster and the object
    run.repo.commit(app_files(run, "web", "nginx:1.3", "a"), "1.3")
    waiting = start_apply_wait(run, "20s")
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 1, f"{out}\n{err}"
    assert f"{run.bundle('web')} on member1: Deployment.apps {ns}/web is Unhealthy on " \
           "member1" in err, err
    assert "on member2" not in err.split("not ready after")[1]  # suspended: not waited for
