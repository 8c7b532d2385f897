"""Rollouts judged by a real Prometheus: the emulator dispatches like Karmada's controllers,
a local exporter serves the request counters the test sets, Debian's prometheus scrapes it,
and `gitgate apply` (the real CLI, one command a step) queries it for the analysis of each
released cluster while a wave bakes. A passing check releases the next wave; a failing one
halts the rollout past its failureLimit, with member2 never released; a Prometheus that
cannot be reached halts it too, never passes it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gitgate.cli import main
from tests.support.chartservers import free_port
from tests.support.looping import T0, Clock
from tests.support.prometheusrun import ERROR_RATE, Exporter, Prometheus
from tests.support.records import stored_record
from tests.support.webrepo import NS, web_repo

pytestmark = pytest.mark.integration


def rollout(failure_limit: int = 1) -> str:
    query = ERROR_RATE.replace("'", "''")
    return ("rollout:\n"
            "  waves: [{clusters: [member1]}, {clusters: [member2]}]\n"
            "  bake: 2s\n"
            "  progressDeadline: 60s\n"
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
