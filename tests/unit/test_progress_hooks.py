"""How far a hook got, read from its ResourceBinding as Karmada writes it: a Job's conditions
per member (reflected into aggregatedStatus), suspended clusters not waited for."""

from gitgate.karmada.bindingstatus import parse_binding
from gitgate.karmada.progress import hook_progress
from gitgate.model import ObjectRef

JOB = ObjectRef("batch", "Job", "shop", "migrate-1a2b3c4d")


def binding(*items, clusters=("member1", "member2"), suspended=()):
    spec = {"clusters": [{"name": c} for c in clusters]}
    if suspended:
        spec["suspension"] = {"dispatchingOnClusters": {"clusterNames": list(suspended)}}
    return parse_binding({"spec": spec, "status": {"aggregatedStatus": list(items)}})


def item(cluster, *conditions, applied=True, **extra):
    status = {"conditions": [{"type": t, "status": "True", "reason": r, "message": m}
                             for t, r, m in conditions]}
    return {"clusterName": cluster, "applied": applied, "health": "Healthy",
            "status": status, **extra}


COMPLETE = ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")
FAILED = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")


def test_done_only_when_complete_on_every_cluster():
    assert hook_progress(JOB, binding(item("member1", COMPLETE), item("member2", COMPLETE))).done
    waiting = hook_progress(JOB, binding(item("member1", COMPLETE), item("member2")))
    assert not waiting.done and waiting.waiting == f"{JOB} on member2 has not completed"
    missing = hook_progress(JOB, binding(item("member1", COMPLETE)))
    assert missing.waiting == f"{JOB} on member2: not applied yet"


def test_a_failed_job_names_cluster_reason_and_message():
    failed = hook_progress(JOB, binding(item("member1", COMPLETE), item("member2", FAILED)))
    assert failed.failed == (f"{JOB} on member2 failed (BackoffLimitExceeded: Job has reached "
                             "the specified backoff limit)")


def test_a_member_that_refuses_the_hook_fails_it():
    refused = item("member1", applied=False, appliedMessage="namespaces \"shop\" not found")
    assert "not found" in hook_progress(JOB, binding(refused)).failed


def test_suspended_clusters_are_not_waited_for_and_nothing_bound_is_waiting():
    assert hook_progress(JOB, binding(item("member1", COMPLETE), suspended=("member2",))).done
    assert "suspended on every cluster" in hook_progress(
        JOB, binding(suspended=("member1", "member2"))).waiting
    assert "no ResourceBinding" in hook_progress(JOB, None).waiting
    assert "not scheduled" in hook_progress(JOB, binding(clusters=())).waiting


def test_pods_by_phase_and_other_kinds_by_health():
    pod = ObjectRef("", "Pod", "shop", "check")
    assert hook_progress(pod, binding(item("member1", status={"phase": "Succeeded"}),
                                      clusters=("member1",))).done
    assert "failed" in hook_progress(pod, binding(item("member1", status={"phase": "Failed"}),
                                                  clusters=("member1",))).failed
    config = ObjectRef("", "ConfigMap", "shop", "flag")
    assert hook_progress(config, binding(item("member1"), clusters=("member1",))).done
