"""Which transitions people are told of, and how (pure): holds and lifts, waves released or
halted, failures, a freeze about to lift; applies and prunes stay in the events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gitgate.apply.transitions import NORMAL, WARNING, Transition
from gitgate.errors import Reason
from gitgate.gate.evaluate import GateState
from gitgate.model import Gate
from gitgate.status.notify import expiring_messages, pass_messages, unsigned_message

NOW = datetime(2026, 11, 24, 9, tzinfo=UTC)


def test_what_a_pass_tells_and_what_it_does_not():
    said = pass_messages([
        ("web", Transition(NORMAL, Reason.APPLIED, "Apply", "revision r2 applied")),
        ("web", Transition(NORMAL, Reason.PRUNED, "Prune", "1 object(s) deleted")),
        ("db", Transition(NORMAL, Reason.HELD, "Hold", "held: freeze: INC-1")),
        ("db", Transition(NORMAL, Reason.LIFTED, "Lift", "no longer held")),
        ("web", Transition(NORMAL, Reason.WAVE_RELEASED, "Release", "wave 1 baked")),
        ("web", Transition(WARNING, Reason.ROLLOUT_HALTED, "Halt", "halted at wave 2: m2")),
        ("api", Transition(WARNING, Reason.APPLY_FAILED, "Fail", "ApplyFailed: x.yaml:3")),
    ], "0123456789abcdef")
    assert [m.title for m in said] == [
        "gitgate: db: Held", "gitgate: db: Lifted", "gitgate: web: WaveReleased",
        "gitgate: web: RolloutHalted", "gitgate: api: failed, ApplyFailed"]
    assert [m.warning for m in said] == [False, False, False, True, True]
    assert all(m.body.endswith("(revision 0123456789ab)") for m in said)
    assert len({m.key for m in said}) == len(said)


def test_a_freeze_is_told_once_within_the_hour_before_it_lifts():
    def state(name: str, until: datetime | None, active: bool = True) -> GateState:
        return GateState(Gate(name, f"gates/{name}.yaml", "INC-2", until=until), active,
                         until, ("web",))
    said = expiring_messages([state("soon", NOW + timedelta(minutes=40)),
                              state("later", NOW + timedelta(hours=3)),
                              state("open", None),
                              state("off", NOW + timedelta(minutes=10), active=False)], NOW)
    assert [m.title for m in said] == ["gitgate: freeze soon lifts at 2026-11-24T09:40:00Z"]
    assert said[0].body == "INC-2\ncovers: web"
    again = expiring_messages([state("soon", NOW + timedelta(minutes=40))],
                              NOW + timedelta(minutes=5))
    assert again[0].key == said[0].key  # the same freeze: the notifier sends it once


def test_an_unsigned_head_is_told_once_per_commit():
    first = unsigned_message("commit abc is not signed", "abc" * 13, "f" * 40)
    assert first.warning and first.body.endswith("ffffffffffff stays in force")
    assert unsigned_message("again", "abc" * 13, None).key == first.key
