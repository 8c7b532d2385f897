"""A gate's one record: built from a plan's gate state or read back from a recorded overview,
it gives the same document, and the web page and `gates` render that record."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from gitgate.gate.evaluate import GateState
from gitgate.model.gaterule import Action, Gate, InvalidGate, Window, spec_schema
from gitgate.status.gaterecord import GateRecord, InvalidGateRecord, recorded_gates
from tests.support.schemas import REPO_ROOT, SCHEMA

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


def test_the_gate_schemas_are_written_from_the_fields():
    """docs/schema's `gate` (GateList's items) and gate.json's `spec` keys are written from the
    fields of `GateRecord` and `Gate` (`python tools/write_schemas.py`): a field added there
    and not written fails here."""
    gate_file = json.loads((REPO_ROOT / "docs/schema/gate.json").read_text())
    assert SCHEMA["$defs"]["gate"] == GateRecord.schema(), "run `python tools/write_schemas.py`"
    assert gate_file["properties"]["spec"]["properties"] == spec_schema(), (
        "run `python tools/write_schemas.py`")


def test_every_key_the_record_writes_is_in_its_schema_and_reads_back():
    gate = Gate("g", "gates/g.yaml", "INC-2", bundles=("a",), owner="ops")
    doc = GateRecord.of(GateState(gate, True, None, ("a",))).document()
    assert set(doc) == set(GateRecord.schema()["properties"])
    assert GateRecord.from_document(doc).document() == doc


def test_an_invalid_gate_file_reads_back_as_the_same_record():
    bad = InvalidGateRecord.of(InvalidGate("gates/t.yaml", "spec.reason is required", 3,
                                           ("teams/a/**",)))
    doc = bad.document()
    assert doc == {"file": "gates/t.yaml", "line": 3, "message": "spec.reason is required",
                   "within": ["teams/a/**"]}
    assert InvalidGateRecord.from_document(doc) == bad and bad.where() == "gates/t.yaml:3"
    assert recorded_gates({"gates": [], "invalidGates": [doc]}) == ([], [bad])
    assert recorded_gates({}) is None
