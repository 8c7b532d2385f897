"""A bundle's state and its member clusters' states: one record each, built once from the
bundle's record and Karmada's report, with one document that status, describe and the loop's
/status all print."""

from __future__ import annotations

from gitgate.apply.inventory import Inventory
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.model.shardmap import ShardMap
from gitgate.status.bundlestate import BundleState, bundle_states

HELD = {"kind": "gate", "gate": "freeze", "file": "gates/f.yaml", "reason": "INC-7",
        "action": "hold", "until": None}


def member(name: str) -> ClusterState:
    return ClusterState(name, True, True, Health.HEALTHY, False, Version.CURRENT)


def test_the_document_says_each_cluster_with_the_revision_it_runs():
    record = Inventory("shop", revision="c2", digest="d2", verdict="held", reasons=(HELD,),
                       applied_revision="c1", applied_digest="d1",
                       clusters_behind=(("member2", "c0"),))
    state = BundleState.of(record, Dispatch((member("member1"), member("member2"))))
    doc = state.document()
    assert doc["pending"] is True and state.revision_cell == "c1 (tried c2)"
    assert [(c["name"], c["revision"]) for c in doc["clusters"]] == [
        ("member1", "c1"), ("member2", "c0")]
    assert [c.runs_other for c in state.clusters] == [None, "c0"]
    assert doc["gates"] == ["freeze"] and doc["reasons"] == [HELD]
    assert doc["message"] == "held by gate freeze (gates/f.yaml): INC-7"
    assert "shard" not in doc


def test_with_shards_each_bundle_names_its_replica_and_unobserved_is_kept_apart():
    shards = ShardMap.of(["r1", "r2"])
    states = bundle_states([Inventory("b"), Inventory("a")], {"a": Dispatch()}, shards)
    assert [s.name for s in states] == ["a", "b"]
    assert [s.observed for s in states] == [True, False]
    assert states[1].document()["shard"] == shards.owner("b")
