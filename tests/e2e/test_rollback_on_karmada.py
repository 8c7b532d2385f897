"""A rollout judged by a real Prometheus and rolled back by a commit, on a real Karmada:
web 1.0 runs on both members; 1.1 is pushed with waves, an error-rate analysis and
`onFailure: rollback`. A local exporter reports a 30% error rate for member1, Prometheus
scrapes it, and `gitgate run --commit-halts` halts the wave on member1 past its failureLimit,
commits one rollback (the folder as 1.0 had it, and a gate holding anything newer) and pushes
it; member1 goes back to 1.0, read from member1 itself, and member2 never runs 1.1."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.karmada import Run, gitgate, stays, wait_for
from tests.support.karmadarun import app_files, with_namespaces
from tests.support.prometheusrun import ERROR_RATE, Exporter, Prometheus

pytestmark = pytest.mark.e2e
ROLLOUT = ("rollout:\n"
           "  waves: [{clusters: [member1]}, {clusters: [member2]}]\n"
           "  bake: 3s\n"
           "  progressDeadline: 90s\n"
           "  onFailure: rollback\n"
           "  analysis:\n"
           "    - name: error-rate\n"
           "      prometheus: {provider: local}\n"
           "      query: '" + ERROR_RATE.replace("'", "''") + "'\n"
           "      failIf: \"> 0.05\"\n"
           "      interval: 1s\n"
           "      failureLimit: 1\n")


def config(url: str) -> str:
    return ("defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"
            f"analysis: {{providers: [{{name: local, url: '{url}'}}]}}\n")


def rollbacks(run: Run) -> list[str]:
    return [s for s in run.repo.git("log", "--format=%s").splitlines()
            if s.startswith("rollback ")]


def applied(run: Run) -> str | None:
    found = [b for b in run.status()["bundles"] if b["name"] == run.bundle("web")]
    return found[0]["lastAppliedRevision"] if found else None


def events(run: Run, reason: str) -> list[str]:
    done = gitgate("describe", run.bundle("web"), "--kubeconfig", str(run.karmada.kubeconfig),
                   "--instance", run.run_id, "-o", "json")
    assert done.returncode == 0, f"gitgate describe failed:\n{done.stdout}\n{done.stderr}"
    return [e["note"] for e in json.loads(done.stdout)["events"] if e["reason"] == reason]


def test_a_failing_analysis_on_member1_rolls_back_by_a_commit(run, karmada, tmp_path):
    ns = run.ns("web")
    seen_on_member2: set[str | None] = set()  # every read of member2 once it ran 1.0

    def image(member: str) -> str | None:
        """The member's image; None: no Deployment there (a failed read raises)."""
        found = karmada.image(member, ns, "web")
        if member == "member2":
            seen_on_member2.add(found)
        return found

    def member2_kept_1_0() -> bool:
        return image("member2") == "nginx:1.0"

    def watching_member2(what: Callable[[], Any]) -> Callable[[], Any]:
        """`what`, reading member2 at each sample too (what it read goes to seen_on_member2)."""
        return lambda: (image("member2"), what())[1]

    with Exporter() as exporter, Prometheus(tmp_path / "prometheus", exporter) as server:
        exporter.error_rate("member1", errors=30, total=100)
        server.wait_for(ERROR_RATE.replace("{{cluster}}", "member1"), 0.3)
        run.repo.git("config", "receive.denyCurrentBranch", "updateInstead")  # the loop pushes
        good = run.repo.commit({"gitgate.yaml": config(server.url),
                                **with_namespaces(run, "web"),
                                **app_files(run, "web", "nginx:1.0", "a")}, "web 1.0")
        loop = run.start_loop(tmp_path / "cache", "--commit-halts")
        try:
            for member in ("member1", "member2"):  # before 1.0 reaches it, nothing is there
                wait_for(lambda m=member: karmada.image(m, ns, "web") == "nginx:1.0",
                         message=f"{member} gets 1.0")
            wait_for(lambda: applied(run) == good, message="the loop records 1.0 as applied")

            web = app_files(run, "web", "nginx:1.1", "a")
            web["web/bundle.yaml"] += ROLLOUT
            run.repo.commit(web, "web 1.1, judged by its error rate")
            wait_for(lambda: image("member1") == "nginx:1.1", message="wave 1 gets 1.1")
            assert member2_kept_1_0()
            karmada.make_healthy("member1", ns, "web")  # Karmada's health alone would pass

            wait_for(watching_member2(lambda: rollbacks(run)), timeout=90, every=1.0,
                     message="the failed wave is rolled back by a commit")
            assert rollbacks(run) == [f"rollback {run.bundle('web')} to {good[:12]}"]
            rollback = run.repo.git("rev-parse", "HEAD").strip()
            body = run.repo.git("log", "-1", "--format=%B", rollback)
            assert "analysis error-rate on member1 failed 2 time(s), past its failureLimit 1: " \
                   "0.3 > 0.05" in body
            touched = run.repo.git("show", "--name-only", "--format=", rollback).split()
            assert [p for p in touched if p.startswith("gates/")] != []
            assert sorted(p for p in touched if not p.startswith("gates/")) == [
                "web/app.yaml", "web/bundle.yaml"]
            for path in ("web/app.yaml", "web/bundle.yaml"):  # the folder as 1.0 had it
                assert run.repo.git("show", f"{rollback}:{path}") == run.repo.git(
                    "show", f"{good}:{path}")

            wait_for(watching_member2(lambda: image("member1") == "nginx:1.0"), timeout=90,
                     message="member1, read from member1, is back on 1.0")
            assert stays(member2_kept_1_0, 8) == []
            assert stays(lambda: image("member1") == "nginx:1.0", 5) == []
            assert rollbacks(run) == [f"rollback {run.bundle('web')} to {good[:12]}"], \
                "later passes committed another rollback"
            assert seen_on_member2 == {"nginx:1.0"}, f"member2 ran {seen_on_member2}"
            told = events(run, "RolledBack")
            assert len(told) == 1 and told[0].startswith(
                f"rolled back to {good[:12]} by commit {rollback[:12]}: analysis error-rate "
                "on member1 failed")
        finally:
            log = run.stop_loop(loop)
            print(log[-4000:])
