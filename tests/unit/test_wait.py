"""`apply --wait`'s polling on plain observations and an explicit clock: a line per change,
a summary on schedule, suspended clusters not waited for, the timeout naming what is left."""

from __future__ import annotations

from gitgate.apply.observe import Observation
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.status.wait import pending, wait_ready


def state(name: str, health: Health = Health.HEALTHY, *, suspended=False,
          version=Version.CURRENT, message="") -> ClusterState:
    return ClusterState(name, True, True, health, suspended, version, message)


def observation(*clusters: ClusterState, propagated: int = 2) -> Observation:
    return Observation({"web": Dispatch(tuple(clusters), "", propagated)})


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def run(readings: list[Observation], timeout: float, summary_every: float = 15.0):
    fake, lines = FakeTime(), []
    reads = iter(readings)
    last = [readings[-1]]

    def read() -> Observation:
        last[0] = next(reads, last[0])
        return last[0]

    result = wait_ready(read, ["web"], timeout, report=lines.append, every=2.0,
                        summary_every=summary_every, clock=fake.clock, sleep=fake.sleep)
    return result, lines, fake.now


def test_ready_once_the_open_cluster_is_healthy_and_suspended_ones_are_not_waited_for():
    sick = state("member1", Health.UNHEALTHY, message="Deployment.apps shop/web is Unhealthy")
    held = state("member2", Health.UNHEALTHY, suspended=True, version=Version.BEHIND)
    result, lines, elapsed = run([observation(sick, held), observation(sick, held),
                                  observation(state("member1"), held)], timeout=60)
    assert result.pending == [] and elapsed == 4.0
    assert lines == [
        "web on member1: Unhealthy, current (Deployment.apps shop/web is Unhealthy)",
        "web on member2: suspended, Unhealthy, behind",
        "web on member1: Healthy, current"]  # one line per change, not per poll


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
