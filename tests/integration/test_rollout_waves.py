"""Progressive rollouts over the emulator, whose bindings dispatch like Karmada's controllers
(tests/kubeapi/dispatch.py): one wave of member clusters at a time, the next released after
the previous baked healthy, a halt when a wave misses its deadline; each step is one
`gitgate apply`, a new process's worth of state read back from the inventory."""

from __future__ import annotations

import json
import shutil
import threading
import time
from datetime import timedelta

import git
import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.cli import main, wall_clock
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.source.git import GitSource
from tests.conftest import committed_repo, set_identity, write_files
from tests.support.looping import T0, Clock
from tests.support.records import stored_record
from tests.support.webrepo import NS, app, web_repo

pytestmark = pytest.mark.integration
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 2s, "
           "progressDeadline: 6s}\n")


@pytest.fixture
def setup(tmp_path, emulator):
    return web_repo(tmp_path, emulator, ROLLOUT)


def apply(capsys, root, flags, clock=wall_clock) -> dict:
    capsys.readouterr()
    code = main(["apply", str(root), *flags, "-o", "json"], clock=clock)
    out = capsys.readouterr().out
    assert code == 0, out
    return next(b for b in json.loads(out)["bundles"] if b["name"] == "web")


def status(capsys, flags, clock=wall_clock) -> dict:
    capsys.readouterr()
    assert main(["status", *flags, "-o", "json"], clock=clock) == 0
    return next(b for b in json.loads(capsys.readouterr().out)["bundles"]
                if b["name"] == "web")


def runs(emulator, cluster: str) -> int | None:
    """The template generation the member cluster runs (None: never dispatched)."""
    key = emulator.state._binding_key(("", "", NS, "web"), "Deployment")
    member = emulator.state.members.get(key, {}).get(cluster)
    return member.runs if member and member.applied else None


def policy_suspension(emulator):
    policy = emulator.state.object("policy.karmada.io", "propagationpolicies", NS,
                                   "gitgate-web")
    return (policy or {}).get("spec", {}).get("suspension")


def rollout_note(bundle: dict) -> str:
    return next(r["reason"] for r in bundle["reasons"] if r["kind"] == "rollout")


def healthy(emulator, cluster):
    emulator.state.report(NS, "Deployment", "web", cluster, health="Healthy")


FAILURE = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": "etcdserver: request timed out", "reason": "InternalError", "code": 500}


def test_a_first_pass_cut_short_after_its_write_ahead_record_rolls_out_from_wave_1(
        setup, emulator, capsys):
    """The write-ahead record of a new bundle names the digest the pass attempts. When the
    pass ends before its final record (here its write fails), the next pass reads a record
    with that digest and no rollout state: attempted is not applied, so the rollout starts
    at wave 1 again and member2 stays suspended."""
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))
    status_writes: list[str] = []

    def fail_the_final_record(request):
        if request.method == "PATCH" and request.path.endswith("/bundles/web/status"):
            status_writes.append(request.path)
            # the write-ahead record is the Bundle's creation: every status write is after
            return 500, FAILURE
        return None

    emulator.state.faults.append(fail_the_final_record)
    assert main(["apply", str(root), *flags, "-o", "json"], clock=clock) != 0
    emulator.state.faults.clear()
    recorded = stored_record(emulator, "web")
    assert recorded.digest and recorded.progression.rollout == ""  # attempted, nothing more
    assert runs(emulator, "member2") is None

    again = apply(capsys, root, flags, clock)
    assert again["verdict"] == "suspended"  # member2 waits for wave 2
    assert policy_suspension(emulator) == {"dispatchingOnClusters": {"clusterNames":
                                                                     ["member2"]}}
    assert runs(emulator, "member2") is None


def test_waves_bake_then_release_and_a_missed_deadline_halts(setup, emulator, capsys):
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))  # a command a second
    first = apply(capsys, root, flags, clock)
    assert first["verdict"] == "suspended"  # member2 waits for wave 2
    assert policy_suspension(emulator) == {"dispatchingOnClusters": {"clusterNames":
                                                                     ["member2"]}}
    assert runs(emulator, "member1") == 1 and runs(emulator, "member2") is None
    assert rollout_note(status(capsys, flags, clock)) == (
        "wave 1 of 2 [member1]: released, waiting for it to be ready")

    apply(capsys, root, flags, clock)
    assert rollout_note(status(capsys, flags, clock)).startswith(
        "wave 1 of 2 [member1]: waiting for member1: Deployment.apps shop/web is Unhealthy")
    healthy(emulator, "member1")
    apply(capsys, root, flags, clock)  # healthy: bake starts
    assert runs(emulator, "member2") is None
    clock.advance(seconds=2.2)
    released = apply(capsys, root, flags, clock)  # baked: wave 2 released
    assert released["verdict"] == "apply" and policy_suspension(emulator) is None
    assert runs(emulator, "member2") == 1
    healthy(emulator, "member2")
    apply(capsys, root, flags, clock)
    clock.advance(seconds=2.2)
    apply(capsys, root, flags, clock)
    assert json.loads(stored_record(emulator, "web").progression.rollout)["wave"] == 2  # done

    # a second revision: wave 1 gets it, member1 stays Unhealthy past the deadline
    write_files(root, {"web/app.yaml": app("web:2")})
    assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
    assert (runs(emulator, "member1"), runs(emulator, "member2")) == (2, 1)
    clock.advance(seconds=6.2)
    halted = apply(capsys, root, flags, clock)
    assert halted["verdict"] == "halted"
    state = status(capsys, flags, clock)
    assert state["verdict"] == "halted"
    assert rollout_note(state).startswith("halted at wave 1 of 2 [member1]: not ready within "
                                        "progressDeadline 6s: member1: Deployment.apps "
                                        "shop/web is Unhealthy on member1")
    clusters = {c["name"]: c for c in state["clusters"]}
    assert (clusters["member2"]["suspended"], clusters["member2"]["version"]) == (True,
                                                                                  "behind")
    # healthy later: still halted, member2 stays on the previous template
    healthy(emulator, "member1")
    assert apply(capsys, root, flags, clock)["verdict"] == "halted"
    assert runs(emulator, "member2") == 1


def test_apply_wait_drives_the_rollout_to_the_end(setup, emulator, capsys):
    root, flags = setup
    write_files(root, {"web/bundle.yaml": "name: web\ndependsOn: [ns]\n" + ROLLOUT.replace(
        "bake: 2s", "bake: 1s").replace("progressDeadline: 6s", "progressDeadline: 30s")})
    done = threading.Event()

    def member_controllers() -> None:  # each member's Deployment gets healthy once it runs
        while not done.is_set():
            for cluster in ("member1", "member2"):
                key = emulator.state._binding_key(("", "", NS, "web"), "Deployment")
                member = emulator.state.members.get(key, {}).get(cluster)
                if member is not None and member.health == "Unhealthy":
                    time.sleep(0.5)
                    healthy(emulator, cluster)
            time.sleep(0.2)

    controllers = threading.Thread(target=member_controllers, daemon=True)
    controllers.start()
    capsys.readouterr()
    try:
        code = main(["apply", str(root), *flags, "--wait", "--timeout", "60s"])
    finally:
        done.set()
    err = capsys.readouterr().err
    assert code == 0, err
    assert "web: rollout wave 1 of 2 [member1]: released" in err
    assert "web: rollout wave 2 of 2 [member2]: released" in err
    assert "web: rollout rolled out" in err
    assert runs(emulator, "member2") == 1 and policy_suspension(emulator) is None


def test_apply_wait_exits_1_when_the_rollout_halts(setup, emulator, capsys):
    root, flags = setup
    capsys.readouterr()
    code = main(["apply", str(root), *flags, "--wait", "--timeout", "60s"])
    err = capsys.readouterr().err
    assert code == 1
    assert ("web: rollout halted at wave 1 of 2 [member1]: not ready within progressDeadline "
            "6s: member1: Deployment.apps shop/web is Unhealthy on member1") in err
    assert runs(emulator, "member2") is None


def pushed(root, tmp_path) -> tuple[git.Repo, git.Repo]:
    """The repo committed and pushed to a bare remote the loop pulls; (remote, work tree)."""
    bare = git.Repo.init(tmp_path / "remote.git", bare=True, initial_branch="main")
    work = git.Repo.clone_from(bare.working_dir, tmp_path / "work")
    set_identity(work)
    shutil.copytree(root, work.working_dir, dirs_exist_ok=True)
    work.git.add("-A")
    work.git.commit("-m", "web with a rollout")
    work.git.push("origin", "HEAD:main")
    return bare, work


def loop_on(bare, flags, tools, tmp_path, clock, **settings) -> Reconciler:
    options = LoopSettings(interval=timedelta(minutes=5), resync=timedelta(hours=24),
                           apply=ApplyOptions(now=T0), **settings)
    return Reconciler(GitSource(bare.working_dir, "main", tmp_path / "cache"),
                      KubeCluster(load_client(flags[1])), tools, options, clock=clock)


def test_run_commit_halts_commits_a_hold_gate_and_lifting_it_continues(
        setup, emulator, tools, tmp_path):
    root, flags = setup
    bare, work = pushed(root, tmp_path)
    clock = Clock(T0)
    loop = loop_on(bare, flags, tools, tmp_path, clock, commit_halts=True)
    assert loop.tick() == "revision"
    clock.advance(seconds=7)  # member1 never healthy: past the 6 s deadline
    assert loop.tick() == "progress-check"  # a rollout deadline: no gate changes
    assert {b.bundle: b.verdict for b in loop.state.last_result.bundles}["web"] == "halted"
    message = bare.head.commit.message
    assert message.startswith("pause web: rollout halted at wave 1 of 2 [member1]: not ready "
                              "within progressDeadline 6s")
    gate_files = [p for p in bare.head.commit.stats.files if p.startswith("gates/")]
    assert len(gate_files) == 1
    clock.advance(seconds=1)
    assert loop.tick() == "revision"  # the gate: held, the halt taken over by it
    assert {b.bundle: b.verdict for b in loop.state.last_result.bundles}["web"] == "held"
    assert runs(emulator, "member2") is None
    work.git.pull("origin", "main")
    work.git.rm(gate_files[0])
    work.git.commit("-m", "resume web")
    work.git.push("origin", "HEAD:main")
    healthy(emulator, "member1")
    clock.advance(seconds=1)
    assert loop.tick() == "revision"
    web = next(b for b in loop.state.last_plan.bundles if b.bundle.name == "web")
    assert web.rollout is not None and not web.rollout.halted
    assert web.rollout.state.wave == 0 and runs(emulator, "member2") is None


SELECTOR_ROLLOUT = ("rollout:\n  waves:\n"
                    "    - labelSelector: {matchLabels: {stage: canary}}\n"
                    "    - labelSelector: {matchExpressions: [{key: stage, operator: In, "
                    "values: [main]}]}\n"
                    "  bake: 1s\n  progressDeadline: 2s\n")


def member_clusters(emulator, flags, **labels: str) -> None:
    """Karmada's Cluster objects, labelled as the test says (member name -> stage)."""
    cluster = KubeCluster(load_client(flags[1]))
    for name, stage in labels.items():
        cluster.apply({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                       "metadata": {"name": name, "labels": {"stage": stage}},
                       "spec": {"syncMode": "Push"}})


def test_selector_waves_and_resume_retries_a_halt_without_a_gate(tmp_path, emulator, capsys):
    root, flags = web_repo(tmp_path, emulator, SELECTOR_ROLLOUT)
    clock = Clock(T0, tick=timedelta(seconds=1))  # a command a second
    repo = committed_repo(root, "web, rolled out by stage")
    member_clusters(emulator, flags, member1="canary", member2="main")

    assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
    assert runs(emulator, "member1") == 1 and runs(emulator, "member2") is None
    assert rollout_note(status(capsys, flags, clock)) == ("wave 1 of 2 [stage=canary: member1]: "
                                                   "released, waiting for it to be ready")
    clock.advance(seconds=2.2)  # member1 never healthy: past the deadline
    assert apply(capsys, root, flags, clock)["verdict"] == "halted"

    # no gate holds web: resume without --kubeconfig says how to retry a halt
    capsys.readouterr()
    assert main(["resume", "web", "--repo", str(root)], clock=clock) == 0  # not an error
    assert "retried with --kubeconfig" in capsys.readouterr().out
    assert main(["resume", "web", "--repo", str(root), *flags, "--dry-run"], clock=clock) == 0
    assert capsys.readouterr().out.startswith("would retry the halted rollout of web at wave 1")
    # a dry run changed nothing
    assert apply(capsys, root, flags, clock)["verdict"] == "halted"
    assert main(["resume", "web", "--repo", str(root), *flags], clock=clock) == 0
    assert "retry the halted rollout of web at wave 1 (halted: not ready within " in (
        capsys.readouterr().out)
    assert len(list(repo.iter_commits())) == 1  # nothing to commit: no gate was lifted

    retried = apply(capsys, root, flags, clock)
    assert retried["verdict"] == "suspended" and runs(emulator, "member2") is None
    # the reconciler's own write left it in place
    assert stored_record(emulator, "web").progression.retry
    healthy(emulator, "member1")
    apply(capsys, root, flags, clock)  # healthy: bake starts
    clock.advance(seconds=1.2)
    assert apply(capsys, root, flags, clock)["verdict"] == "apply"  # wave 2 released
    assert runs(emulator, "member2") == 1 and policy_suspension(emulator) is None

    # nothing halted and no gate: resume says so and changes nothing
    capsys.readouterr()
    assert main(["resume", "web", "--repo", str(root), *flags], clock=clock) == 0
    assert "no rollout of it is halted" in capsys.readouterr().out


def test_a_running_loop_retries_a_halted_wave_when_resume_asks(setup, emulator, tools,
                                                              tmp_path, capsys):
    root, flags = setup
    bare, work = pushed(root, tmp_path)
    clock = Clock(T0)
    loop = loop_on(bare, flags, tools, tmp_path, clock)
    assert loop.tick() == "revision"
    clock.advance(seconds=7)
    assert loop.tick() == "progress-check"  # a rollout deadline: no gate changes
    assert {b.bundle: b.verdict for b in loop.state.last_result.bundles}["web"] == "halted"
    loop.observer.refresh_status()
    clock.advance(seconds=60)
    assert loop.tick() is None  # halted: nothing to do until asked
    capsys.readouterr()
    assert main(["resume", "web", "--repo", work.working_dir, *flags]) == 0
    loop.observer.refresh_status()  # the loop's periodic read of Karmada finds the request
    assert loop.state.rollout_retry and loop.wake.is_set()
    assert loop.tick() == "rollout-retry"
    web = next(b for b in loop.state.last_plan.bundles if b.bundle.name == "web")
    assert web.rollout is not None and not web.rollout.halted
    assert web.rollout.state.started == clock()  # the wave's deadline starts again
    loop.observer.refresh_status()
    assert loop.tick() is None  # the request is spent


def test_a_rollout_never_moves_on_what_karmada_could_not_say(setup, emulator, capsys):
    """The bindings cannot be read (500): the rollout neither releases nor halts a wave, the
    bundle writes nothing this pass and says why; once they can be read it goes on."""
    root, flags = setup
    apply(capsys, root, flags)
    before = stored_record(emulator, "web").progression.rollout
    write_files(root, {"web/app.yaml": app("web:2")})
    emulator.state.faults.append(lambda request: (500, {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
        "message": "etcdserver: request timed out"}) if request.method == "GET"
        and "/resourcebindings" in request.path else None)
    capsys.readouterr()
    main(["apply", str(root), *flags, "-o", "json"])
    web = next(b for b in json.loads(capsys.readouterr().out)["bundles"] if b["name"] == "web")
    emulator.state.faults.clear()
    assert web["verdict"] == "held" and not web["applied"], web
    assert "cannot read what Karmada did" in web["message"]
    live = emulator.state.object("apps", "deployments", NS, "web")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "web:1"
    assert stored_record(emulator, "web").progression.rollout == before  # it did not move
    assert apply(capsys, root, flags)["verdict"] == "suspended"  # readable again: wave 1
    live = emulator.state.object("apps", "deployments", NS, "web")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "web:2"
