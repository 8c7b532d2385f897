"""A gate's one record: built from a plan's gate state or read back from a recorded overview,
it gives the same document, and the web page and `gates` render that record."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gitgate.gate.evaluate import GateState
from gitgate.model.gaterule import Action, Gate, Window
from gitgate.status.gaterecord import GateRecord

NOW = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)


def test_a_recorded_gate_reads_back_as_the_same_record():
    gate = Gate("nightly", "gates/n.yaml", "no deploys at night", action=Action.SUSPEND,
                bundles=("*",), clusters=("member1",), owner="team-web",
                until=NOW + timedelta(days=1),
                windows=(Window("0 22 * * *", timedelta(hours=8)),))
    record = GateRecord.of(GateState(gate, True, NOW + timedelta(hours=2), ("a", "b", "c"),
                                     since=NOW), max_covers=2)
    assert record.covers == ("a", "b") and record.covers_more == 1
    assert record.windows == ("0 22 * * * for 8h (UTC)",)
    doc = record.document()
    assert doc["until"] == "2026-11-25T03:00:00Z" and doc["since"] == "2026-11-24T03:00:00Z"
    assert doc["action"] == "suspend" and doc["clusters"] == ["member1"]
    assert GateRecord.from_document(doc) == record


def test_without_a_limit_every_bundle_it_covers_is_listed():
    gate = Gate("freeze", "gates/f.yaml", "INC-1", bundles=("*",))
    record = GateRecord.of(GateState(gate, False, None, tuple(f"b{i}" for i in range(300))))
    assert len(record.covers) == 300 and record.covers_more == 0
    assert record.document()["nextChange"] is None and record.owner is None
