"""Each outcome of a prune check says what it does, and the engine, `plan --kubeconfig` and
`gitgate remove` read only that: an outcome without its handling fails here."""

from __future__ import annotations

from gitgate.apiserver.changeset import ChangeKind
from gitgate.apply.prunedecision import Listed, Outcome


def test_every_outcome_says_what_it_does():
    handled = {outcome: outcome.handling for outcome in Outcome}
    assert [o for o, h in handled.items() if h.deletes] == [Outcome.DELETE]
    assert handled[Outcome.DELETE].shown is ChangeKind.DELETED
    assert handled[Outcome.GONE].shown is None and not handled[Outcome.GONE].stays


def test_a_waiting_delete_stays_recorded_and_shows_as_held():
    waits = Outcome.WAITS.handling
    assert waits.stays and waits.listed is Listed.HELD and waits.shown is ChangeKind.HELD
    assert not waits.deletes


def test_objects_left_for_good_leave_the_record_and_show_as_skipped():
    for outcome, listed in ((Outcome.NOT_OWNED, Listed.NOT_OWNED),
                            (Outcome.DISABLED, Listed.KEPT)):
        handling = outcome.handling
        assert not handling.stays and handling.listed is listed
        assert handling.shown is ChangeKind.SKIPPED
