"""An object written while a finalizer still held it after its deletion (Karmada's keeps a
policy a pass before pruned): the write went to the object that goes, so it is written again
once that has gone (`apply.recreate.after_deletion`)."""

from __future__ import annotations

import pytest

from gitgate.apiserver.changeset import Applied
from gitgate.apply.recreate import after_deletion, terminating
from gitgate.errors import KubeError, Reason

POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "gitgate-web", "namespace": "shop"}, "spec": {}}
GOING = {**POLICY, "metadata": {**POLICY["metadata"], "deletionTimestamp": "2026-11-18T12:00:00Z",
                                "finalizers": ["karmada.io/propagation-policy-controller"]}}


class Cluster:
    def __init__(self, live_for: int):
        self.reads, self.live_for, self.applied = 0, live_for, []

    def get(self, api_version, kind, namespace, name):
        self.reads += 1
        return GOING if self.reads <= self.live_for else None

    def apply(self, obj, *, force=False, **_):
        self.applied.append(obj)
        return Applied({**obj}, created=True)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_write_to_an_object_being_deleted_is_told_apart():
    assert terminating(Applied(GOING, created=False))
    assert not terminating(Applied(POLICY, created=False))


def test_it_is_written_again_once_the_finalizer_let_it_go():
    cluster, clock = Cluster(live_for=3), Clock()
    answer = after_deletion(cluster, POLICY, sleep=clock.sleep, clock=clock)
    assert answer.created and cluster.applied == [POLICY] and cluster.reads == 4


def test_one_that_does_not_go_fails_naming_the_finalizer():
    cluster, clock = Cluster(live_for=10_000), Clock()
    with pytest.raises(KubeError) as caught:
        after_deletion(cluster, POLICY, timeout=5, sleep=clock.sleep, clock=clock)
    assert caught.value.reason == Reason.APPLY_FAILED and not cluster.applied
    assert "karmada.io/propagation-policy-controller" in caught.value.message
    assert "the next pass tries again" in caught.value.message
