"""A Friday 18:00 Europe/Berlin window of 62h on either side of both 2026 DST changes
(spring forward Sun 29 March 01:00 UTC, fall back Sun 25 October 01:00 UTC)."""

from datetime import UTC, datetime, timedelta

import pytest

from gitgate.gate.windows import gate_activity
from gitgate.model import Gate, Window


def utc(*parts):
    return datetime(*parts, tzinfo=UTC)


FREEZE = Gate("freeze", "gates/f.yaml", "weekend freeze", bundles=("*",),
              windows=(Window("0 18 * * 5", timedelta(hours=62), "Europe/Berlin"),))


@pytest.mark.parametrize("now, active, next_change", [
    # week before spring forward: CET, 18:00 local = 17:00 UTC
    (utc(2026, 3, 20, 16, 59), False, utc(2026, 3, 20, 17)),
    (utc(2026, 3, 20, 17, 0), True, utc(2026, 3, 23, 7)),
    # the window that spans the spring change starts in CET and lasts 62 real hours
    (utc(2026, 3, 27, 17, 0), True, utc(2026, 3, 30, 7)),
    (utc(2026, 3, 29, 12, 0), True, utc(2026, 3, 30, 7)),
    (utc(2026, 3, 30, 7, 0), False, utc(2026, 4, 3, 16)),
    # after spring forward: CEST, 18:00 local = 16:00 UTC
    (utc(2026, 4, 3, 15, 59), False, utc(2026, 4, 3, 16)),
    (utc(2026, 4, 3, 16, 0), True, utc(2026, 4, 6, 6)),
    # the window that spans the fall-back change starts in CEST
    (utc(2026, 10, 23, 15, 59), False, utc(2026, 10, 23, 16)),
    (utc(2026, 10, 25, 3, 0), True, utc(2026, 10, 26, 6)),
    (utc(2026, 10, 26, 6, 0), False, utc(2026, 10, 30, 17)),
    # after fall back: CET again
    (utc(2026, 10, 30, 16, 30), False, utc(2026, 10, 30, 17)),
    (utc(2026, 10, 30, 17, 0), True, utc(2026, 11, 2, 7)),
])
def test_friday_evening_window_across_dst(now, active, next_change):
    activity = gate_activity(FREEZE, now)
    assert (activity.active, activity.next_change) == (active, next_change)


def test_until_lifts_a_window_gate_and_overlapping_windows_chain():
    gate = Gate("g", "f", "r", bundles=("*",), until=utc(2026, 3, 21, 0),
                windows=(Window("0 18 * * 5", timedelta(hours=62), "Europe/Berlin"),))
    assert gate_activity(gate, utc(2026, 3, 20, 18)).next_change == utc(2026, 3, 21, 0)
    assert gate_activity(gate, utc(2026, 3, 21, 0)).active is False
    assert gate_activity(gate, utc(2026, 3, 21, 0)).next_change is None
    chained = Gate("c", "f", "r", bundles=("*",), windows=(
        Window("0 0 * * *", timedelta(hours=25), "UTC"),))
    activity = gate_activity(chained, utc(2026, 1, 1, 12))
    assert activity.active and activity.next_change is not None
    assert activity.next_change > utc(2026, 1, 5)
