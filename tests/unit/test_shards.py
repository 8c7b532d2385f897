"""Sharding's pure parts with plain data: who owns a bundle (rendezvous hashing: few bundles
move when a replica comes or goes), the recorded assignment, and the fence's terms under an
injected clock (a replica paused past its renew deadline writes nothing of its old pass)."""

from __future__ import annotations

import pytest

from gitgate.apiserver.ports import create
from gitgate.errors import KubeError, Reason
from gitgate.model.shardmap import ShardMap, owner
from gitgate.passes.fencing import Fence, FencedCluster
from gitgate.passes.replicas import lease_name
from gitgate.passes.shards import Turn
from gitgate.status.overview import merged_overview
from tests.support.memory_cluster import MemoryCluster
from tests.support.objects import cm

BUNDLES = [f"team{i % 7}-app-{i}" for i in range(3000)]  # one source each


def owners(members: tuple[str, ...]) -> dict[str, str | None]:
    return {b: owner(b, members) for b in BUNDLES}


def test_every_bundle_has_one_owner_and_the_shares_are_even():
    three = ShardMap.of(["c", "a", "b"])
    assert three.members == ("a", "b", "c")
    shares = {m: sum(1 for b in BUNDLES if three.owns(m, b)) for m in three.members}
    assert sum(shares.values()) == len(BUNDLES)
    assert all(0.28 < n / len(BUNDLES) < 0.39 for n in shares.values()), shares
    assert ShardMap.of([]).owner("x") is None


def test_a_replica_leaving_moves_only_its_own_bundles():
    before, after = owners(("a", "b", "c")), owners(("a", "c"))
    moved = {b for b in BUNDLES if before[b] != after[b]}
    assert moved == {b for b in BUNDLES if before[b] == "b"}


def test_a_replica_joining_takes_about_a_share_and_nothing_moves_elsewhere():
    before, after = owners(("a", "b")), owners(("a", "b", "c"))
    moved = [b for b in BUNDLES if before[b] != after[b]]
    assert all(after[b] == "c" for b in moved)
    assert 0.28 < len(moved) / len(BUNDLES) < 0.39


def test_the_recorded_assignment_is_checked():
    shards = ShardMap.of(["b", "a"])
    assert ShardMap.from_dict(shards.as_dict()) == shards
    assert ShardMap.from_dict({"members": ["a", "b"], "digest": "forged"}) is None
    assert ShardMap.from_dict({"members": ["a", 3], "digest": shards.digest}) is None
    assert ShardMap.from_dict(None) is None and ShardMap.from_dict("x") is None
    assert ShardMap.of(["a"]).digest != ShardMap.of(["a", "b"]).digest


class Monotonic:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_fence_holds_its_term_only_while_the_lease_stays_fresh():
    clock = Monotonic()
    fence = Fence(renew_deadline=10, clock=clock)
    assert fence.term() is None  # never renewed: never writes
    fence.renewed()
    term = fence.term()
    assert term is not None
    clock.now = 4
    fence.renewed()  # on time: the same term
    assert fence.term() == term and fence.holds(term)
    clock.now = 13.9
    assert fence.holds(term)
    clock.now = 14.0  # 10 s since the last renewal: the pass's writes stop
    assert not fence.holds(term) and fence.term() is None


def test_a_paused_replica_renewing_after_its_deadline_starts_a_new_term():
    """SIGSTOP mid-pass, SIGCONT after the others took over: the Lease renews at once, but
    the pass that began before the pause holds the old term and writes nothing more."""
    clock = Monotonic()
    fence = Fence(renew_deadline=10, clock=clock)
    fence.renewed()
    old = fence.term()
    clock.now = 40  # paused for 40 s
    fence.renewed()
    assert fence.term() is not None and fence.term() != old
    assert not fence.holds(old)
    fence.lapse()  # deleted on shutdown
    assert fence.term() is None


def test_a_fenced_cluster_refuses_writes_once_the_term_is_over():
    clock = Monotonic()
    fence = Fence(renew_deadline=10, clock=clock)
    fence.renewed()
    memory = MemoryCluster()
    fenced = FencedCluster(memory, fence, fence.term())
    fenced.apply(cm("one"))
    assert memory.get("v1", "ConfigMap", "ns", "one") is not None
    create(fenced, cm("created"))
    assert memory.get("v1", "ConfigMap", "ns", "created") is not None
    clock.now = 11
    with pytest.raises(KubeError) as refused:
        fenced.apply(cm("two"))
    assert refused.value.reason is Reason.FENCED and "ConfigMap ns/two" in refused.value.message
    with pytest.raises(KubeError):
        fenced.delete("v1", "ConfigMap", "ns", "one")
    with pytest.raises(KubeError) as refused:  # an event is a write too
        create(fenced, cm("four"))
    assert refused.value.reason is Reason.FENCED and "ConfigMap ns/four" in refused.value.message
    fenced.apply(cm("three"), dry_run=True)  # a dry run writes nothing: allowed
    assert fenced.get("v1", "ConfigMap", "ns", "one") is not None  # reads go on
    assert memory.get("v1", "ConfigMap", "ns", "two") is None


def test_a_turn_acts_only_on_an_assignment_everyone_acknowledged():
    shards = ShardMap.of(["a", "b"])
    assert Turn(shards, "a", 3).acting
    assert not Turn(shards, "a", 3, waiting_for=("b",)).acting
    assert not Turn(shards, "a", None).acting  # Lease not fresh
    assert not Turn(shards, "c", 3).acting  # not in it yet
    assert not Turn(None, "a", 3).acting
    mine = [b for b in BUNDLES[:50] if Turn(shards, "a", 3).owns(b)]
    theirs = [b for b in BUNDLES[:50] if Turn(shards, "b", 3).owns(b)]
    assert sorted(mine + theirs) == sorted(BUNDLES[:50]) and not set(mine) & set(theirs)
    assert "waiting for b" in Turn(shards, "a", 3, waiting_for=("b",)).said()


def test_lease_names_are_valid_whatever_the_host_is_called():
    assert lease_name("default", "Host_1.example-abc123") == \
        "gitgate-default-replica-host-1-example-abc123"
    assert lease_name("x", "___") == "gitgate-x-replica-replica"
    assert len(lease_name("x", "h" * 400)) < 253


def test_the_overview_parts_merge_by_the_assignment():
    owners = {"x": "a", "y": "b", "moved": "b", "gitgate.gates": "b"}
    parts = {
        "a": {"revision": "r2", "gates": [{"name": "from-a"}], "invalidGates": [],
              "rollouts": {"x": {"w": 1}, "y": {"stale": True}},
              "changes": {"x": {"at": "a"}, "y": {"stale": True}, "moved": {"at": "old"}},
              "changesLeftOut": True},
        "b": {"revision": "r2", "gates": [{"name": "from-b"}], "invalidGates": [],
              "rollouts": {"y": {"w": 2}}, "changes": {"y": {"at": "b"}}},
        "gone": {"rollouts": {"x": {"stale": True}}, "changes": {"x": {"stale": True}}},
    }
    merged = merged_overview(parts, owners.get)
    assert merged["gates"] == [{"name": "from-b"}]  # the part of the gates' holder
    assert merged["rollouts"] == {"x": {"w": 1}, "y": {"w": 2}}  # owners' only
    assert merged["changes"] == {"x": {"at": "a"}, "y": {"at": "b"},
                                 "moved": {"at": "old"}}  # a moved bundle keeps its last one
    assert merged["changesLeftOut"] is True and "rolloutsLeftOut" not in merged
    assert merged_overview({}, owners.get) == {}
    assert merged_overview({"a": parts["a"]}, lambda _: None)["gates"] == [{"name": "from-a"}]


def test_a_lease_swept_after_its_holder_died_does_not_bring_it_back():
    """Sightings: a peer whose Lease stopped changing is dead after a lease duration; its
    Lease being swept later is no new sign of life (it stays dead), while a Lease vanishing
    under a live peer is waited out from the vanishing."""
    from datetime import timedelta

    from gitgate.passes.replicas import Replica, Sightings

    def lease(identity: str, version: str) -> Replica:
        return Replica(identity, None, timedelta(seconds=15), "", "", version)

    seen = Sightings(15.0)
    assert seen.live([lease("a", "1"), lease("b", "1")], (), 0.0) == ("a", "b")
    assert seen.live([lease("a", "2"), lease("b", "1")], (), 16.0) == ("a",)  # b renews no more
    assert seen.live([lease("a", "3")], ("a",), 30.0) == ("a",)  # b's Lease swept: still dead
    assert seen.live([lease("b", "2")], ("a", "b"), 31.0) == ("a", "b")  # a vanished live
    assert seen.live([lease("b", "3")], ("b",), 45.0) == ("a", "b")
    assert seen.live([lease("b", "4")], ("b",), 46.5) == ("b",)  # a waited out
