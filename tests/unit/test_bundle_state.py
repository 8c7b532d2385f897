"""A bundle's state and its member clusters' states: one record each, built once from the
bundle's record and Karmada's report, with one document that status, describe and the loop's
/status all print."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from gitgate.apply.inventory import Inventory
from gitgate.apply.recordedreason import RecordedReason
from gitgate.apply.recordformat import clusters_status
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.model.shardmap import ShardMap
from gitgate.output.recordviews import describe_text
from gitgate.output.statusviews import status_table
from gitgate.output.weblayout import Snapshot
from gitgate.output.webpages import bundle_page
from gitgate.status.bundlestate import BundleState, ClusterRecord, bundle_states
from tests.support.schemas import SCHEMA

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

HELD = {"kind": "gate", "gate": "freeze", "file": "gates/f.yaml", "reason": "INC-7",
        "action": "hold", "until": None}


def member(name: str) -> ClusterState:
    return ClusterState(name, True, True, Health.HEALTHY, False, Version.CURRENT)


def test_the_document_says_each_cluster_with_the_revision_it_runs():
    record = Inventory("shop", revision="c2", digest="d2", verdict="held",
                       reasons=(RecordedReason.of(HELD),),
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


def test_the_committed_schema_of_a_cluster_state_is_the_records_own():
    """docs/schema's `clusterState` is written from the fields of `ClusterState` (`python
    tools/write_schemas.py`): a signal added there and not written fails here."""
    assert SCHEMA["$defs"]["clusterState"] == ClusterRecord.schema(), (
        "run `python tools/write_schemas.py`")


def test_every_view_of_a_cluster_carries_the_signals_of_its_record():
    """The document, the Bundle's status, `status -o wide`, `describe` and the bundle's page
    take a cluster's signals from the record's field list, not a list of their own."""
    sick = ClusterState("member2", True, False, Health.UNHEALTHY, True, Version.BEHIND,
                        "web on member2: quota exceeded")
    record = Inventory("shop", verdict="apply", revision="c1", applied_revision="c1",
                       digest="d1", applied_digest="d1")
    state = BundleState.of(record, Dispatch((member("member1"), sick)))
    keys = set(ClusterRecord.schema()["properties"])
    assert [set(c) for c in state.document()["clusters"]] == [keys, keys]
    written = clusters_status(record, state.dispatch)["status"]["clusters"]
    assert set(written[1]) == keys and set(written[0]) == keys - {"message"}  # none to say
    assert written[1]["health"] == "Unhealthy" and written[1]["suspended"] is True
    headings = ClusterState.headings()
    assert headings == ["SCHEDULED", "APPLIED", "HEALTH", "SUSPENDED", "VERSION"]
    wide = status_table([state], NOW, wide=True).splitlines()
    assert wide[0].split()[3:8] == headings
    row = next(line for line in wide if " member2 " in line).split()
    assert row[3:8] == ["yes", "no", "Unhealthy", "yes", "behind"]
    described = describe_text(state, [], NOW)
    assert ("scheduled=yes applied=no health=Unhealthy suspended=yes version=behind"
            in described)
    snap = Snapshot(now=NOW, inventories=(record,), dispatch={"shop": state.dispatch},
                    overview={}, origin="test")
    page = bundle_page(snap, record, [])
    table = page.split("<h2>Member clusters</h2>")[1]
    assert re.findall(r"<th>(\w+)</th>", table)[2:7] == [h.capitalize() for h in headings]
    cells = re.search(r'<tr data-cluster="member2">(.*?)</tr>', table, re.S).group(1)
    assert re.findall(r"<td>([^<]*)</td>", cells)[:5] == ["yes", "no", "Unhealthy", "yes",
                                                          "behind"]
