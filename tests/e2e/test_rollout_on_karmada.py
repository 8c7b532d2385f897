"""Progressive rollouts on a real Karmada, driven by `gitgate run`: wave 1 (member1) gets a new
image while member2 keeps the old one; once member1 is healthy and baked, member2 gets it; a
restart mid-wave skips nothing; a wave left Unhealthy past its deadline halts the rollout with
member2 on the previous image; a new commit starts again."""

from __future__ import annotations

import json
import signal

import pytest

from tests.e2e.karmada import Run, gitgate, stays, wait_for
from tests.support.karmadarun import app_files, with_namespaces
from tests.support.records import record

pytestmark = pytest.mark.e2e
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 5s, "
           "progressDeadline: DEADLINE}\n")


def files(run: Run, image: str, deadline: str = "20s") -> dict:
    out = app_files(run, "web", image, "a")
    out["web/bundle.yaml"] += ROLLOUT.replace("DEADLINE", deadline)
    return out


def rollout_state(run: Run) -> dict:
    inventory = record(run.karmada.api, run.bundle("web"), run.run_id)
    text = inventory.progression.rollout if inventory else ""
    return json.loads(text) if text else {}


def verdict(run: Run) -> str:
    return run.result(run.status(), "web")["verdict"]


def test_waves_on_karmada_with_a_restart_and_a_halt(run, karmada, tmp_path):
    ns = run.ns("web")
    image = lambda member: karmada.image(member, ns, "web")  # noqa: E731
    run.repo.commit({**with_namespaces(run, "web"), **files(run, "nginx:1.0")}, "web 1.0")
    loop = run.start_loop(tmp_path / "cache")
    try:
        wait_for(lambda: image("member1") == "nginx:1.0", message="wave 1 gets 1.0")
        assert image("member2") is None  # not released yet
        karmada.make_healthy("member1", ns, "web")
        wait_for(lambda: image("member2") == "nginx:1.0", timeout=60,
                 message="after member1 baked, member2 gets 1.0")
        karmada.make_healthy("member2", ns, "web")
        wait_for(lambda: rollout_state(run).get("wave") == 2, timeout=60,
                 message="the first rollout completes")

        # the wave waits out 18s of watching and a restart before it is healthy: its deadline
        # leaves room for a slow machine (the halt is the 1.2 commit's case)
        run.repo.commit(files(run, "nginx:1.1", deadline="120s"), "web 1.1")
        wait_for(lambda: image("member1") == "nginx:1.1", message="wave 1 gets 1.1")
        assert stays(lambda: image("member2") == "nginx:1.0", 8) == []
        loop.send_signal(signal.SIGKILL)  # mid-wave: member1 not healthy yet
        loop.wait(timeout=30)
        loop = run.start_loop(tmp_path / "cache")
        assert stays(lambda: image("member2") == "nginx:1.0", 10) == [], \
            "member2 got 1.1 before wave 1 was healthy (a restart skipped a wave)"
        assert rollout_state(run)["wave"] == 0
        assert rollout_state(run)["halted"] == ""
        karmada.make_healthy("member1", ns, "web")
        wait_for(lambda: image("member2") == "nginx:1.1", timeout=60,
                 message="after the restart, member1 baked, member2 gets 1.1")
        karmada.make_healthy("member2", ns, "web")
        wait_for(lambda: rollout_state(run).get("wave") == 2, timeout=60,
                 message="the second rollout completes")

        run.repo.commit(files(run, "nginx:1.2"), "web 1.2, never healthy")
        wait_for(lambda: image("member1") == "nginx:1.2", message="wave 1 gets 1.2")
        wait_for(lambda: verdict(run) == "halted", timeout=60, message="halted after 20s")
        assert "not ready within progressDeadline 20s: member1" in rollout_state(run)["halted"]
        assert stays(lambda: image("member2") == "nginx:1.1", 8) == []

        run.repo.commit(files(run, "nginx:1.3"), "web 1.3: a new commit starts again")
        wait_for(lambda: image("member1") == "nginx:1.3", message="wave 1 gets 1.3")
        assert image("member2") == "nginx:1.1"
        karmada.make_healthy("member1", ns, "web")
        wait_for(lambda: image("member2") == "nginx:1.3", timeout=60,
                 message="member2 gets 1.3 after wave 1 baked")
    finally:
        log = run.stop_loop(loop)
        print(log[-3000:])


def test_commit_halts_commits_a_gate_and_removing_it_continues(run, karmada, tmp_path):
    ns = run.ns("web")
    run.repo.git("config", "receive.denyCurrentBranch", "updateInstead")  # the loop pushes
    run.repo.commit({**with_namespaces(run, "web"), **files(run, "nginx:1.0")}, "web 1.0")
    loop = run.start_loop(tmp_path / "cache", "--commit-halts")
    try:
        wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:1.0",
                 message="wave 1 gets 1.0")
        wait_for(lambda: "rollout halted at wave 1 of 2 [member1]" in run.repo.git(
            "log", "-1", "--format=%s"), timeout=90, message="the halt is committed")
        gate_file = run.repo.git("show", "--name-only", "--format=", "HEAD").split()[0]
        assert gate_file.startswith("gates/")
        wait_for(lambda: verdict(run) == "held", message="the committed gate holds the bundle")
        assert karmada.image("member2", ns, "web") is None
        karmada.make_healthy("member1", ns, "web")
        run.repo.commit({gate_file: None}, "resume web")
        wait_for(lambda: karmada.image("member2", ns, "web") == "nginx:1.0", timeout=90,
                 message="lifting the gate continues: member2 gets 1.0 after the bake")
    finally:
        log = run.stop_loop(loop)
        print(log[-3000:])


def label_members(karmada, key: str, labels: dict[str, str | None]) -> None:
    """Label (or unlabel, with None) Karmada's Cluster objects, as a platform team would."""
    for member, value in labels.items():
        path = karmada.api.path_for("cluster.karmada.io/v1alpha1", "Cluster", "", member)
        status, body = karmada.api.request(
            "PATCH", path, body={"metadata": {"labels": {key: value}}},
            content_type="application/merge-patch+json")
        assert status == 200, body


def test_selector_waves_and_resume_retrying_a_halt_on_karmada(run, karmada, tmp_path):
    ns = run.ns("web")
    key = f"e2e.gitgate.dev/stage-{run.run_id}"
    label_members(karmada, key, {"member1": "canary", "member2": "main"})
    rollout = (f"rollout:\n  waves:\n    - labelSelector: {{matchLabels: {{{key}: canary}}}}\n"
               f"    - labelSelector: {{matchExpressions: [{{key: {key}, operator: In, "
               "values: [main]}]}\n  bake: 3s\n  progressDeadline: 15s\n")
    web = app_files(run, "web", "nginx:1.0", "a")
    web["web/bundle.yaml"] += rollout
    run.repo.commit({**with_namespaces(run, "web"), **web}, "web 1.0, waves by stage label")
    loop = run.start_loop(tmp_path / "cache", "--status-interval", "5s")
    try:
        wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:1.0",
                 message="the canary wave (member1) gets 1.0")
        wait_for(lambda: verdict(run) == "halted", timeout=60,
                 message="member1 never healthy: halted after 15s")
        assert "not ready within progressDeadline 15s: member1" in rollout_state(run)["halted"]
        assert karmada.image("member2", ns, "web") is None
        karmada.make_healthy("member1", ns, "web")
        assert stays(lambda: verdict(run) == "halted", 5) == []  # healthy later: still halted
        done = gitgate("resume", run.bundle("web"), "--repo", str(run.repo.root),
                       "--kubeconfig", str(karmada.kubeconfig), "--instance", run.run_id)
        assert done.returncode == 0, done.stderr
        assert f"retry the halted rollout of {run.bundle('web')} at wave 1" in done.stdout
        wait_for(lambda: karmada.image("member2", ns, "web") == "nginx:1.0", timeout=60,
                 message="the retried wave bakes, then the main wave (member2) gets 1.0")
        assert rollout_state(run)["halted"] == ""
    finally:
        log = run.stop_loop(loop)
        label_members(karmada, key, {"member1": None, "member2": None})
        print(log[-3000:])
