"""Bundles with hooks over the emulator, whose bindings carry what Karmada's controllers
write: each `gitgate apply` is one pass, a new process's worth of state read back from the
inventory; the test acts as the members' Job controllers through `emulator.state.report`."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from datetime import timedelta

import pytest

from gitgate.cli import main, wall_clock
from tests.conftest import write_files
from tests.support.manifests import pre_sync_job
from tests.support.objects import shown
from tests.support.records import names, stored_record
from tests.support.schemas import validate
from tests.support.webrepo import NS, web_repo

pytestmark = pytest.mark.integration

HOOKS = pre_sync_job(NS) + f"""\
---
apiVersion: v1
kind: Pod
metadata:
  name: web-test
  namespace: {NS}
  annotations: {{helm.sh/hook: test}}
spec:
  containers: [{{name: check, image: "busybox:1.36"}}]
"""
HOLD = """\
apiVersion: gitgate.io/v1alpha1
kind: Gate
metadata: {name: freeze}
spec: {bundles: [web], action: hold, reason: INC-42}
"""
COMPLETE = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
FAILED = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                          "message": "Job has reached the specified backoff limit"}]}


@pytest.fixture
def setup(tmp_path, emulator):
    root, flags = web_repo(tmp_path, emulator)
    write_files(root, {"web/hooks.yaml": HOOKS})
    return root, flags


def apply(capsys, root, flags, code=0, clock=wall_clock) -> dict:
    capsys.readouterr()
    assert main(["apply", str(root), *flags, "-o", "json"], clock=clock) == code
    doc = json.loads(capsys.readouterr().out)
    return next(b for b in doc["bundles"] if b["name"] == "web")


def jobs(emulator) -> list[str]:
    return sorted(k[3] for k in emulator.state.objects if k[1] == "jobs" and k[2] == NS)


def image(emulator) -> str | None:
    web = emulator.state.object("apps", "deployments", NS, "web")
    return web["spec"]["template"]["spec"]["containers"][0]["image"] if web else None


def written(emulator, start=0) -> list[str]:
    """Paths written since request `start`, in order."""
    return [r.path for r in emulator.state.writes()[start:]]


def complete(emulator, job, status=COMPLETE, clusters=("member1", "member2")):
    for cluster in clusters:
        emulator.state.report(NS, "Job", job, cluster, status=status)


def test_pre_sync_hook_runs_before_the_templates_and_test_hooks_never(setup, emulator, capsys):
    root, flags = setup
    first = apply(capsys, root, flags)
    (job,) = jobs(emulator)
    assert job.startswith("migrate-") and len(job) == len("migrate-") + 8
    assert image(emulator) is None  # the templates wait for the hook
    assert first["message"].startswith("syncing: step 1 of 2: PreSync wave 0")
    assert not any("/pods" in p for p in written(emulator))  # the helm test hook

    waiting = apply(capsys, root, flags)  # not complete anywhere yet
    assert image(emulator) is None and "has not completed" in waiting["message"]
    complete(emulator, job, clusters=("member1",))
    apply(capsys, root, flags)
    assert image(emulator) is None  # member2 has not completed it
    mark = len(emulator.state.writes())
    complete(emulator, job, clusters=("member2",))
    done = apply(capsys, root, flags)
    assert image(emulator) == "web:1" and not done["failed"]
    paths = written(emulator, mark)
    assert any(p.endswith("/deployments/web") for p in paths)
    assert not any("/jobs/" in p for p in paths)  # the hook is not sent again
    assert not any("/pods" in p for p in written(emulator))

    inventory = stored_record(emulator, "web")
    assert json.loads(inventory.progression.hooks)["step"] == 2
    assert job in names(inventory)
    mark = len(emulator.state.writes())
    later = wall_clock() + timedelta(seconds=2)  # the resync is due
    # a resync never re-runs a hook
    again = apply(capsys, root, [*flags, "--resync", "1s"], clock=lambda: later)
    assert not any("/jobs" in p for p in written(emulator, mark)) and jobs(emulator) == [job]
    assert again["unchanged"] >= 2 and not again["failed"]


def test_a_held_bundle_writes_no_hook(setup, emulator, capsys):
    root, flags = setup
    write_files(root, {"gates/web.yaml": HOLD})
    held = apply(capsys, root, flags)
    assert held["verdict"] == "held" and jobs(emulator) == []
    assert not any("/jobs" in p for p in written(emulator))


def test_a_new_digest_runs_a_new_hook_deletes_the_old_one_and_a_failure_holds_the_templates(
        setup, emulator, capsys):
    root, flags = setup
    apply(capsys, root, flags)
    (first_job,) = jobs(emulator)
    complete(emulator, first_job)
    apply(capsys, root, flags)
    assert image(emulator) == "web:1"

    write_files(root, {"web/app.yaml": (root / "web/app.yaml").read_text().replace(
        "web:1", "web:2")})
    mark = len(emulator.state.writes())
    apply(capsys, root, flags)
    second_job = next(j for j in jobs(emulator) if j != first_job)
    assert first_job not in jobs(emulator)  # BeforeHookCreation: the previous run is deleted
    paths = written(emulator, mark)
    assert any(p.endswith(f"/jobs/{second_job}") for p in paths)
    assert any(p.endswith(f"/jobs/{first_job}") for p in paths)  # the DELETE
    assert image(emulator) == "web:1"

    complete(emulator, second_job, FAILED, clusters=("member2",))
    complete(emulator, second_job, clusters=("member1",))
    failed = apply(capsys, root, flags, code=1)
    assert failed["reason"] == "HookFailed" and failed["failed"]
    assert second_job in failed["message"] and "member2" in failed["message"]
    assert "BackoffLimitExceeded" in failed["message"]
    assert image(emulator) == "web:1"  # the Deployment keeps its old template
    still = apply(capsys, root, flags, code=1)  # a failed sync stays failed for this digest
    assert still["reason"] == "HookFailed" and image(emulator) == "web:1"


def test_plan_shows_the_steps_and_the_skipped_test_hook(setup, emulator, capsys):
    root, flags = setup
    capsys.readouterr()
    assert main(["plan", str(root), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validate(doc, "Plan")
    hooks = next(b for b in doc["bundles"] if b["name"] == "web")["hooks"]
    assert [(s["phase"], s["wave"], len(s["hooks"]), len(s["templates"]))
            for s in hooks["steps"]] == [("PreSync", 0, 1, 0), ("Sync", 0, 0, 2)]
    assert shown(hooks["skipped"][0]["object"]) == f"Pod {NS}/web-test"
    assert "step" not in hooks  # offline: where the sync is needs the cluster
    assert next(b for b in doc["bundles"] if b["name"] == "ns")["hooks"] is None

    assert main(["plan", str(root)]) == 0
    text = capsys.readouterr().out
    assert "web: PreSync 0: hook Job/migrate-" in text and "→ Sync 0: 2 objects" in text
    assert f"web: skipped Pod {NS}/web-test (helm.sh/hook: test" in text

    apply(capsys, root, flags)
    assert main(["plan", str(root), *flags, "-o", "json"]) == 0
    live = json.loads(capsys.readouterr().out)
    hooks = next(b for b in live["bundles"] if b["name"] == "web")["hooks"]
    assert hooks["step"] == 1 and hooks["synced"] is False
    assert "has not completed" in hooks["waitingFor"]


def test_apply_wait_keeps_passing_until_the_hook_completed(setup, emulator, capsys):
    """`apply --wait` drives the sync: it passes again while the PreSync Job runs, writes the
    Deployment once the members completed it, then waits for it to be ready."""
    root, flags = setup
    stop = threading.Event()

    def members():  # the members' Job and Deployment controllers
        while not stop.is_set():
            for job in jobs(emulator):
                with contextlib.suppress(KeyError):  # not yet bound: the next round
                    complete(emulator, job)
            if image(emulator):
                for cluster in ("member1", "member2"):
                    emulator.state.report(NS, "Deployment", "web", cluster, health="Healthy")
            time.sleep(0.2)

    worker = threading.Thread(target=members, daemon=True)
    worker.start()
    try:
        capsys.readouterr()
        code = main(["apply", str(root), *flags, "--wait", "--timeout", "60s"])
        err = capsys.readouterr().err
    finally:
        stop.set()
        worker.join()
    assert code == 0, err
    assert "web: hooks step 1 of 2: PreSync wave 0" in err and "web: hooks synced" in err
    assert image(emulator) == "web:1"


def test_apply_wait_fails_when_a_sync_has_not_finished_by_the_timeout(setup, emulator, capsys):
    """Nobody completes the PreSync Job: `apply --wait` says where the sync stopped and fails,
    even though what Karmada runs of the bundle is ready."""
    root, flags = setup
    capsys.readouterr()
    code = main(["apply", str(root), *flags, "--wait", "--timeout", "2s"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "web: hooks not finished within --timeout 2s: step 1 of 2: PreSync wave 0" in err
    assert image(emulator) is None  # the templates wait for the hook


def test_a_sync_never_moves_on_what_karmada_could_not_say(setup, emulator, capsys):
    """How far the hook got cannot be read (500 on the bindings): the sync neither goes on
    nor times out, the bundle writes nothing this pass and says why."""
    root, flags = setup
    apply(capsys, root, flags)
    (job,) = jobs(emulator)
    complete(emulator, job)
    emulator.state.faults.append(lambda request: (500, {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
        "message": "etcdserver: request timed out"}) if request.method == "GET"
        and "/resourcebindings" in request.path else None)
    mark = len(emulator.state.writes())
    held = apply(capsys, root, flags)
    emulator.state.faults.clear()
    assert held["verdict"] == "held" and "cannot read how far" in held["message"]
    assert image(emulator) is None and written(emulator, mark) == [
        p for p in written(emulator, mark) if "/gitgate-system/" in p]
    assert apply(capsys, root, flags)["failed"] is False and image(emulator) == "web:1"


def test_a_first_pass_cut_short_after_its_write_ahead_record_still_waits_for_the_hook(
        setup, emulator, capsys):
    """The write-ahead record names the digest the pass attempts; when the pass ends before
    its final record, the next pass reads that digest with no sync state: attempted is not
    applied, so the templates still wait for the PreSync hook."""
    root, flags = setup
    status_writes: list[str] = []

    def fail_the_final_record(request):
        if request.method == "PATCH" and request.path.endswith("/bundles/web/status"):
            status_writes.append(request.path)
            # the write-ahead record is the Bundle's creation: every status write is after
            return 500, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "reason": "InternalError", "code": 500,
                         "message": "etcdserver: request timed out"}
        return None

    emulator.state.faults.append(fail_the_final_record)
    assert main(["apply", str(root), *flags, "-o", "json"]) != 0
    emulator.state.faults.clear()
    recorded = stored_record(emulator, "web")
    assert recorded.digest and recorded.progression.hooks == ""
    assert image(emulator) is None

    again = apply(capsys, root, flags)  # the hook starts over; the templates wait for it
    assert image(emulator) is None and again["message"].startswith("syncing: ")
