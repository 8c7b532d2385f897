"""A bundle's reasons as one typed record: what a pass decides (`HoldReason`) and what a
record keeps read back to the same record and the same document, older records included."""

from __future__ import annotations

from datetime import UTC, datetime

from gitgate.apply.recordedreason import RecordedReason
from gitgate.apply.standing import standing
from gitgate.model import HoldReason, ObjectRef, ReasonKind, Verdict
from gitgate.model.gaterule import Action

UNTIL = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def test_a_recorded_reason_reads_back_as_the_record_it_was_written_from():
    hold = HoldReason(ReasonKind.GATE, "freeze", "gates/f.yaml", "INC-7", Action.SUSPEND,
                      UNTIL, ("member1",), ObjectRef("apps", "Deployment", "shop", "web"), 4)
    kept = RecordedReason.of_hold(hold).document()
    assert kept["until"] == "2026-12-01T08:00:00Z" and kept["line"] == 4
    record = RecordedReason.of(kept)
    assert record == RecordedReason.of_hold(hold)
    assert record.document() == kept and list(record.document()) == list(kept)
    assert record.where() == "gates/f.yaml:4"


def test_an_older_record_without_action_or_until_reads_as_a_hold():
    record = RecordedReason.of({"kind": "gate", "gate": "freeze", "file": "gates/f.yaml",
                                "reason": "INC-7"})
    assert record.action == "hold" and record.until is None and record.where() == "gates/f.yaml"
    meaning = standing("shop", Verdict.HELD, [record], "")
    assert meaning.reasons == (record,)
    assert meaning.message == "held by gate freeze (gates/f.yaml): INC-7"
