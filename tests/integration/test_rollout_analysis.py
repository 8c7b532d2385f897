"""Rollouts judged by a real Prometheus: the emulator dispatches like Karmada's controllers,
a local exporter serves the request counters the test sets, Debian's prometheus scrapes it,
and `gitgate apply` (the real CLI, one command a step) queries it for the analysis of each
released cluster while a wave bakes. A passing check releases the next wave; a failing one
halts the rollout past its failureLimit, with member2 never released; a Prometheus that
cannot be reached halts it too, never passes it."""

from __future__ import annotations

import json
import logging
import shutil
from datetime import timedelta
from pathlib import Path

import git
import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.cli import main
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.prometheus.instant import InstantQueries
from gitgate.source.git import GitSource
from tests.conftest import set_identity, write_files
from tests.support.chartservers import free_port
from tests.support.looping import T0, Clock
from tests.support.prometheusrun import ERROR_RATE, Exporter, Prometheus
from tests.support.records import stored_record
from tests.support.webrepo import NS, app, web_repo

pytestmark = pytest.mark.integration


def rollout(failure_limit: int = 1, on_failure: str = "hold") -> str:
    query = ERROR_RATE.replace("'", "''")
    return ("rollout:\n"
            "  waves: [{clusters: [member1]}, {clusters: [member2]}]\n"
            "  bake: 2s\n"
            "  progressDeadline: 60s\n"
            f"  onFailure: {on_failure}\n"
            "  analysis:\n"
            "    - name: error-rate\n"
            "      prometheus: {provider: local}\n"
            f"      query: '{query}'\n"
            "      failIf: \"> 0.05\"\n"
            "      interval: 1s\n"
            f"      failureLimit: {failure_limit}\n")


def providers(url: str) -> str:
    return f"analysis: {{providers: [{{name: local, url: '{url}'}}]}}\n"


@pytest.fixture
def prometheus(tmp_path):
    with Exporter() as exporter, Prometheus(tmp_path / "prometheus", exporter) as server:
        yield exporter, server


def repo_with(tmp_path, emulator, url: str) -> tuple:
    root, flags = web_repo(tmp_path, emulator, rollout())
    config = root / "gitgate.yaml"
    config.write_text(config.read_text() + providers(url))
    return root, flags


def apply(capsys, root, flags, clock) -> dict:
    capsys.readouterr()
    code = main(["apply", str(root), *flags, "-o", "json"], clock=clock)
    out = capsys.readouterr().out
    assert code == 0, out
    return next(b for b in json.loads(out)["bundles"] if b["name"] == "web")


def status(capsys, flags, clock) -> dict:
    capsys.readouterr()
    assert main(["status", *flags, "-o", "json"], clock=clock) == 0
    return next(b for b in json.loads(capsys.readouterr().out)["bundles"]
                if b["name"] == "web")


def describe(capsys, flags, clock) -> str:
    capsys.readouterr()
    assert main(["describe", "web", *flags], clock=clock) == 0
    return capsys.readouterr().out


def describe_json(capsys, flags, clock) -> dict:
    return json.loads(describe(capsys, [*flags, "-o", "json"], clock))


def rollout_note(bundle: dict) -> str:
    return next(r["reason"] for r in bundle["reasons"] if r["kind"] == "rollout")


def runs(emulator, cluster: str) -> int | None:
    key = emulator.state._binding_key(("", "", NS, "web"), "Deployment")
    member = emulator.state.members.get(key, {}).get(cluster)
    return member.runs if member and member.applied else None


def suspended(emulator) -> list[str]:
    policy = emulator.state.object("policy.karmada.io", "propagationpolicies", NS,
                                   "gitgate-web")
    spec = (policy or {}).get("spec", {}).get("suspension") or {}
    return list(spec.get("dispatchingOnClusters", {}).get("clusterNames", []))


def released_and_healthy(capsys, root, flags, clock, emulator) -> None:
    """The first apply releases wave 1 (member1); Karmada then reports it Healthy."""
    first = apply(capsys, root, flags, clock)
    assert first["verdict"] == "suspended" and suspended(emulator) == ["member2"]
    assert runs(emulator, "member1") == 1 and runs(emulator, "member2") is None
    emulator.state.report(NS, "Deployment", "web", "member1", health="Healthy")


def test_a_failing_query_on_member1_halts_the_wave_and_member2_is_never_released(
        tmp_path, emulator, prometheus, capsys):
    exporter, server = prometheus
    exporter.error_rate("member1", errors=30, total=100)
    server.wait_for(ERROR_RATE.replace("{{cluster}}", "member1"), 0.3)
    root, flags = repo_with(tmp_path, emulator, server.url)
    clock = Clock(T0, tick=timedelta(seconds=1))
    released_and_healthy(capsys, root, flags, clock, emulator)

    apply(capsys, root, flags, clock)  # Karmada says healthy: the first measurement fails
    assert rollout_note(status(capsys, flags, clock)) == (
        "wave 1 of 2 [member1]: healthy, waiting for its analysis: error-rate on member1: "
        "0.3 > 0.05 (1 of 1 failure(s) allowed)")
    clock.advance(seconds=5)  # past the bake: Karmada's health alone would release wave 2
    halted = apply(capsys, root, flags, clock)
    assert halted["verdict"] == "halted"
    assert rollout_note(status(capsys, flags, clock)) == (
        "halted at wave 1 of 2 [member1]: analysis error-rate on member1 failed 2 time(s), "
        "past its failureLimit 1: 0.3 > 0.05")
    assert suspended(emulator) == ["member2"] and runs(emulator, "member2") is None
    shown = status(capsys, flags, clock)["analysis"]
    assert [(r["check"], r["cluster"], r["failures"], r["passing"], r["said"])
            for r in shown] == [("error-rate", "member1", 2, False, "0.3 > 0.05")]
    described = describe(capsys, flags, clock)
    assert "Analysis:\n  error-rate on member1: failing, 2 failure(s); last " in described
    halt = [e for e in describe_json(capsys, flags, clock)["events"]
            if e["reason"] == "RolloutHalted"]
    assert len(halt) == 1 and "analysis error-rate on member1 failed 2 time(s)" in (
        halt[0]["note"])

    exporter.error_rate("member1", errors=0, total=100)  # a halt stays until resumed
    server.wait_for(ERROR_RATE.replace("{{cluster}}", "member1"), 0.0)
    clock.advance(seconds=5)
    assert apply(capsys, root, flags, clock)["verdict"] == "halted"
    assert runs(emulator, "member2") is None
    state = json.loads(stored_record(emulator, "web").progression.rollout)
    assert state["wave"] == 0 and state["halted"].startswith("analysis error-rate on member1")
    assert json.loads(state["analysis"])["error-rate/member1"]["failures"] == 2


def test_a_passing_query_releases_the_next_wave(tmp_path, emulator, prometheus, capsys):
    exporter, server = prometheus
    exporter.error_rate("member1", errors=1, total=100)
    server.wait_for(ERROR_RATE.replace("{{cluster}}", "member1"), 0.01)
    root, flags = repo_with(tmp_path, emulator, server.url)
    clock = Clock(T0, tick=timedelta(seconds=1))
    released_and_healthy(capsys, root, flags, clock, emulator)
    apply(capsys, root, flags, clock)  # measured: holds; the bake runs
    assert rollout_note(status(capsys, flags, clock)).startswith(
        "wave 1 of 2 [member1]: healthy, baking until")
    clock.advance(seconds=2.5)
    released = apply(capsys, root, flags, clock)
    assert released["verdict"] == "apply" and suspended(emulator) == []
    assert runs(emulator, "member2") == 1


def test_a_prometheus_that_cannot_be_reached_halts_never_passes(tmp_path, emulator, capsys):
    root, flags = repo_with(tmp_path, emulator, f"http://127.0.0.1:{free_port()}")
    clock = Clock(T0, tick=timedelta(seconds=1))
    released_and_healthy(capsys, root, flags, clock, emulator)
    apply(capsys, root, flags, clock)
    clock.advance(seconds=5)
    halted = apply(capsys, root, flags, clock)
    assert halted["verdict"] == "halted" and runs(emulator, "member2") is None
    assert "analysis error-rate on member1 failed 2 time(s), past its failureLimit 1: " \
           "cannot be evaluated: local cannot be reached" in rollout_note(
               status(capsys, flags, clock))


def image(emulator) -> str:
    deployment = emulator.state.object("apps", "deployments", NS, "web") or {}
    return str(deployment["spec"]["template"]["spec"]["containers"][0]["image"])


def commits(bare) -> list[str]:
    return [c.message.splitlines()[0] for c in bare.iter_commits("main")]


class Looped:
    """`gitgate run --commit-halts` over a bare remote: web:1 out everywhere (no rollout),
    then `push_web2` pushes web:2 with an analysis and `onFailure: rollback`."""

    def __init__(self, tmp_path, emulator, server, tools, resync=timedelta(hours=24)):
        root, self.flags = repo_with(tmp_path, emulator, server.url)
        (root / "web" / "bundle.yaml").write_text("name: web\ndependsOn: [ns]\n")
        self.bare = git.Repo.init(tmp_path / "remote.git", bare=True, initial_branch="main")
        self.work = git.Repo.clone_from(self.bare.working_dir, tmp_path / "work")
        set_identity(self.work)
        shutil.copytree(root, self.work.working_dir, dirs_exist_ok=True)
        self.work.git.add("-A")
        self.work.git.commit("-m", "web:1")
        self.work.git.push("origin", "HEAD:main")
        self.good = self.work.head.commit.hexsha
        self.clock = Clock(T0)
        settings = LoopSettings(interval=timedelta(minutes=5), resync=resync,
                                commit_halts=True,
                                apply=ApplyOptions(now=T0, measure=InstantQueries().measure))
        self.loop = Reconciler(GitSource(self.bare.working_dir, "main", tmp_path / "cache"),
                               KubeCluster(load_client(self.flags[1])), tools, settings,
                               clock=self.clock)
        assert self.loop.tick() == "revision"

    def push_web2(self, message: str) -> None:
        self.work.git.pull("origin", "main")
        write_files(Path(self.work.working_dir), {
            "web/bundle.yaml": "name: web\ndependsOn: [ns]\n" + rollout(1, "rollback"),
            "web/app.yaml": app("web:2")})
        self.work.git.add("-A")
        self.work.git.commit("-m", message)
        self.work.git.push("origin", "HEAD:main")

    def halt(self, emulator) -> None:
        """web:2 (pushed) reaches member1, whose error rate fails the check twice."""
        self.clock.advance(seconds=1)
        assert self.loop.tick() == "revision"  # wave 1: member1 gets web:2
        assert (runs(emulator, "member1"), runs(emulator, "member2")) == (2, 1)
        emulator.state.report(NS, "Deployment", "web", "member1", health="Healthy")
        for _ in range(2):  # two failed measurements: past failureLimit 1
            self.clock.advance(seconds=5)
            assert self.loop.tick() == "progress-check"

    def verdict(self) -> str:
        return {b.bundle: b.verdict for b in self.loop.state.last_result.bundles}["web"]

    def rollbacks(self) -> list[str]:
        return [c for c in commits(self.bare) if c.startswith("rollback")]


def test_run_rolls_back_a_failed_wave_once_and_holds_the_failed_digest(
        tmp_path, emulator, prometheus, tools, capsys):
    """`onFailure: rollback` under `gitgate run --commit-halts`: web:1 is out everywhere; web:2
    with an analysis reaches member1, its error rate fails the check past its limit, and the
    loop commits exactly one rollback (the folder as web:1 had it, and a gate letting only
    that through), pushes it, and member1 goes back to web:1 while member2 never ran web:2.
    Later passes commit nothing more, and web:2 pushed again stays held by the gate."""
    exporter, server = prometheus
    exporter.error_rate("member1", errors=30, total=100)
    server.wait_for(ERROR_RATE.replace("{{cluster}}", "member1"), 0.3)
    run = Looped(tmp_path, emulator, server, tools)
    assert image(emulator) == "web:1" and (runs(emulator, "member1"),
                                           runs(emulator, "member2")) == (1, 1)
    run.push_web2("web:2, rolled out with an analysis")
    run.halt(emulator)
    assert commits(run.bare)[0] == f"rollback web to {run.good[:12]}"
    assert "analysis error-rate on member1 failed 2 time(s)" in run.bare.head.commit.message
    gate_files = [p for p in run.bare.head.commit.stats.files if p.startswith("gates/")]
    assert len(gate_files) == 1
    assert runs(emulator, "member2") == 1  # member2 never ran web:2
    told = [e["note"] for e in describe_json(capsys, run.flags, run.clock)["events"]
            if e["reason"] == "RolledBack"]
    assert told == [f"rolled back to {run.good[:12]} by commit "
                    f"{run.bare.head.commit.hexsha[:12]}: analysis error-rate on member1 "
                    "failed 2 time(s), past its failureLimit 1: 0.3 > 0.05"]

    run.clock.advance(seconds=1)
    assert run.loop.tick() == "revision"  # the rollback: web:1 again, let through by its gate
    assert image(emulator) == "web:1"
    for _ in range(3):  # later passes commit nothing more
        run.clock.advance(seconds=5)
        run.loop.tick()
    assert run.rollbacks() == [f"rollback web to {run.good[:12]}"]

    run.push_web2("web:2 again")  # the failed digest stays held until the gate is lifted
    run.clock.advance(seconds=1)
    assert run.loop.tick() == "revision"
    assert run.verdict() == "held" and image(emulator) == "web:1"
    assert len(run.rollbacks()) == 1


def test_a_rollback_the_remote_refuses_leaves_the_rollout_halted_and_says_why(
        tmp_path, emulator, prometheus, tools, caplog):
    """The remote refuses the rollback's push: the rollout stays halted, the log says why,
    and the next pass (here the resync) commits it once the remote takes it."""
    exporter, server = prometheus
    exporter.error_rate("member1", errors=30, total=100)
    server.wait_for(ERROR_RATE.replace("{{cluster}}", "member1"), 0.3)
    run = Looped(tmp_path, emulator, server, tools, resync=timedelta(minutes=1))
    run.push_web2("web:2, rolled out with an analysis")
    hook = Path(run.bare.git_dir) / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n")
    hook.chmod(0o755)
    with caplog.at_level(logging.WARNING, logger="gitgate"):
        run.halt(emulator)
    assert run.verdict() == "halted" and run.rollbacks() == []
    said = [r.getMessage() for r in caplog.records if "rollback of web" in r.getMessage()]
    assert said and said[0].startswith(f"cannot commit the rollback of web to {run.good[:12]}")
    assert said[0].endswith("it stays halted") and runs(emulator, "member2") == 1

    hook.unlink()
    run.clock.advance(minutes=2)
    run.loop.tick()
    assert run.rollbacks() == [f"rollback web to {run.good[:12]}"]


def test_the_worked_example_plans_with_its_analysis(capsys):
    example = Path(__file__).resolve().parents[2] / "examples" / "repo"
    assert main(["plan", str(example), "-o", "json"]) == 0
    bundles = json.loads(capsys.readouterr().out)["bundles"]
    spec = next(b for b in bundles if b["name"] == "podinfo")["rollout"]["spec"]
    assert spec["onFailure"] == "rollback"
    assert [(c["name"], c["provider"], c["failIf"], c["failureLimit"])
            for c in spec["analysis"]] == [("error-rate", "main", "> 0.05", 2)]
