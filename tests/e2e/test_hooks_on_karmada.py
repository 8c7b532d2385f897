"""Hooks on a real Karmada: a PreSync Job (a generated name, written with the bundle's policy)
reaches both members before the Deployment changes; the test completes it on both members, as
their Job controllers would, and only then is the Deployment written. A new commit runs a new
Job (the previous run is deleted); failed on one member, it stops the sync: the Deployment
keeps its old template everywhere and the bundle reports HookFailed."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from tests.e2e.karmada import Run, gitgate, stays, wait_for
from tests.support.karmadarun import app_files, on_both, with_namespaces
from tests.support.manifests import pre_sync_job

pytestmark = pytest.mark.e2e


def files(run: Run, image: str) -> dict:
    ns = run.ns("web")
    out = app_files(run, "web", image, "a")
    out["web/hooks.yaml"] = pre_sync_job(ns)
    return out


def jobs(run: Run, where: str) -> list[str]:
    cluster = run.karmada.api if where == "karmada" else run.karmada.members[where]
    return sorted(j["metadata"]["name"] for j in cluster.list_objects(
        "batch/v1", "Job", run.ns("web")))


def finish_job(run: Run, member: str, name: str, *, failed: bool = False) -> None:
    """Write the Job's status on a member as its Job controller would (members run none)."""
    cluster = run.karmada.members[member]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if failed:
        why = {"reason": "BackoffLimitExceeded",
               "message": "Job has reached the specified backoff limit"}
        status = {"startTime": now, "failed": 1, "conditions": [
            {"type": "FailureTarget", "status": "True", "lastTransitionTime": now, **why},
            {"type": "Failed", "status": "True", "lastTransitionTime": now, **why}]}
    else:
        why = {"reason": "CompletionsReached", "message": "Reached expected number of "
               "succeeded pods"}
        status = {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now, **why},
            {"type": "Complete", "status": "True", "lastTransitionTime": now, **why}]}
    path = cluster.path_for("batch/v1", "Job", run.ns("web"), name) + "/status"
    code, body = cluster.request("PATCH", path, body={"status": status},
                                 content_type="application/merge-patch+json")
    assert code == 200, body


def apply(run: Run) -> tuple[int, dict]:
    done = gitgate("apply", str(run.repo.root), "--kubeconfig", str(run.karmada.kubeconfig),
                   "--instance", run.run_id, "-o", "json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, run.result(json.loads(done.stdout), "web")


def test_pre_sync_job_runs_on_both_members_before_the_deployment(run, karmada):
    ns = run.ns("web")
    run.repo.commit({**with_namespaces(run, "web"), **files(run, "nginx:1.0")}, "web 1.0")
    code, first = apply(run)
    assert code == 0 and first["message"].startswith("syncing: step 1 of 2: PreSync")
    (job,) = jobs(run, "karmada")
    assert job.startswith("migrate-")
    for member in ("member1", "member2"):
        wait_for(lambda m=member: jobs(run, m) == [job], message=f"the Job reaches {member}")
    assert karmada.image("karmada", ns, "web") is None  # not written yet

    finish_job(run, "member1", job)
    apply(run)
    assert stays(lambda: karmada.image("karmada", ns, "web") is None and apply(run)[0] == 0,
                 6, every=2) == [], "the Deployment was written before member2 completed"
    finish_job(run, "member2", job)
    wait_for(lambda: apply(run)[0] == 0 and karmada.image("karmada", ns, "web") == "nginx:1.0",
             timeout=60, every=2, message="the Deployment is written once both completed")
    on_both(karmada, lambda m: karmada.image(m, ns, "web"), "nginx:1.0")

    # a new commit: a new Job; the previous run is deleted; the Deployment waits again
    run.repo.commit(files(run, "nginx:1.1"), "web 1.1")
    apply(run)
    second = wait_for(lambda: (lambda found: found[0] if found and found != [job] and len(
        found) == 1 else None)(jobs(run, "karmada")), message="one new Job, the old one deleted")
    for member in ("member1", "member2"):
        wait_for(lambda m=member: second in jobs(run, m), message=f"the new Job reaches {member}")
    assert karmada.image("karmada", ns, "web") == "nginx:1.0"
    finish_job(run, "member2", second)
    finish_job(run, "member1", second, failed=True)
    result = wait_for(lambda: (lambda r: r[1] if r[0] == 1 else None)(apply(run)), timeout=60,
                      every=2, message="the bundle fails with HookFailed")
    assert result["reason"] == "HookFailed"
    assert second in result["message"] and "member1" in result["message"]
    assert "BackoffLimitExceeded" in result["message"]
    time.sleep(3)
    assert karmada.image("karmada", ns, "web") == "nginx:1.0"
    for member in ("member1", "member2"):
        assert karmada.image(member, ns, "web") == "nginx:1.0"
    status = run.result(run.status(), "web")
    assert status["verdict"] == "failed" and status["message"].startswith("HookFailed: ")
