"""`apply --wait` settling, turn by turn of the loop, on plain observations and an explicit
clock: a line per change, a summary on schedule, suspended clusters and held bundles not
waited for, the timeout naming what is left, a failed pass or an unreadable Karmada ending
the wait."""

from __future__ import annotations

from datetime import UTC, datetime

from gitgate.apply.work import BundleResult, PassResult
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.model import Verdict
from gitgate.passes.karmadareads import Observation
from gitgate.plan import Plan
from gitgate.status.wait import Settling, pending


def state(name: str, health: Health = Health.HEALTHY, *, suspended=False,
          version=Version.CURRENT, message="") -> ClusterState:
    return ClusterState(name, True, True, health, suspended, version, message)


def observation(*clusters: ClusterState, propagated: int = 2) -> Observation:
    return Observation({"web": Dispatch(tuple(clusters), "", propagated)})


def run(readings: list[Observation], timeout: float, summary_every: float = 15.0):
    """The loop's turns every 2 s, each with the next reading (the last one repeats), until
    settled: the result, the lines printed and the seconds it took."""
    settling = Settling(timeout, 0.0, summary_every=summary_every)
    plan = Plan("r1", datetime(2026, 1, 1, tzinfo=UTC), (), (), (), ())
    passed = PassResult("r1", [BundleResult("web", str(Verdict.APPLY)),
                               BundleResult("db", str(Verdict.HELD))])
    lines: list[str] = []
    now = 0.0
    for turn in range(1000):
        lines_now, outcome = settling.turn(plan, passed, readings[min(turn, len(readings) - 1)],
                                           now)
        lines += lines_now
        if outcome is not None:
            return outcome, [line for line in lines if not line.startswith("waiting up")], now
        now += 2.0
    raise AssertionError("never settled")


def test_ready_once_the_open_cluster_is_healthy_and_suspended_ones_are_not_waited_for():
    sick = state("member1", Health.UNHEALTHY, message="Deployment.apps shop/web is Unhealthy")
    held = state("member2", Health.UNHEALTHY, suspended=True, version=Version.BEHIND)
    result, lines, elapsed = run([observation(sick, held), observation(sick, held),
                                  observation(state("member1"), held)], timeout=60)
    assert result.pending == [] and elapsed == 4.0
    assert lines == [
        "web on member1: Unhealthy, current (Deployment.apps shop/web is Unhealthy)",
        "web on member2: suspended, Unhealthy, behind",
        "web on member1: Healthy, current",  # one line per change, not per poll
        "all 1 bundles ready after 4s"]  # db is held: not written, not waited for


def test_the_timeout_names_bundle_cluster_and_message_with_summaries_on_the_way():
    sick = state("member1", Health.UNHEALTHY, message="Deployment.apps shop/web is Unhealthy "
                                                       "on member1")
    result, lines, elapsed = run([observation(sick)], timeout=40, summary_every=15)
    assert elapsed == 40.0
    assert [str(p) for p in result.pending] == [
        "web on member1: Deployment.apps shop/web is Unhealthy on member1"]
    assert [line for line in lines if line.startswith("waiting")] == [
        "waiting 16s: 1 of 1 bundles not ready (web)",
        "waiting 32s: 1 of 1 bundles not ready (web)"]


def test_placed_nowhere_is_waited_for_but_a_bundle_of_namespaces_is_not():
    assert [str(p) for p in pending(observation(), ["web"])] == [
        "web: not scheduled on any cluster"]
    assert pending(observation(propagated=0), ["web"]) == []


def test_an_unreadable_karmada_ends_the_wait_with_its_error():
    result, _, _ = run([Observation(error="cannot read Karmada's bindings: forbidden")], 60)
    assert result.error.startswith("cannot read") and result.pending == []


def test_a_failed_pass_settles_at_once_and_a_turn_before_any_pass_waits():
    settling = Settling(60, 0.0)
    plan = Plan("r1", datetime(2026, 1, 1, tzinfo=UTC), (), (), (), ())
    assert settling.turn(None, None, None, 10.0) == ([], None)
    broken = PassResult("r1", [BundleResult("web", str(Verdict.APPLY), failed=True)])
    lines, outcome = settling.turn(plan, broken, None, 12.0)
    assert outcome is not None and outcome.ready  # the pass's failure is the pass's to report
    assert lines == []
    _, late = Settling(5, 0.0).turn(None, None, None, 6.0)
    assert late is not None and late.error == "no pass ran within --timeout"
