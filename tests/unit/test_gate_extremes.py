"""Gate values at the edges are answered, not raised: a minutely window lasting a month, a
cron that never fires, durations and times near the end of the calendar."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitgate.errors import ConfigError
from gitgate.gate.spec import parse_gate_file
from gitgate.gate.windows import gate_activity
from gitgate.timespec import parse_duration, parse_time

NOW = datetime(2026, 11, 22, 12, 0, 30, tzinfo=UTC)


def gate(windows: str = "", until: str = "") -> str:
    return ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: g}\nspec:\n"
            "  bundles: [a]\n  reason: r\n" + (f"  until: {until!r}\n" if until else "")
            + (f"  windows: {windows}\n" if windows else ""))


def test_a_minutely_window_lasting_a_month_is_always_on():
    gates, invalid = parse_gate_file(gate("[{cron: '* * * * *', duration: 30d}]"), "g.yaml")
    assert invalid == []
    activity = gate_activity(gates[0], NOW)
    assert activity.active
    assert activity.next_change is None or activity.next_change > NOW + timedelta(days=365)


def test_the_latest_start_decides_the_end_of_overlapping_occurrences():
    gates, _ = parse_gate_file(gate("[{cron: '0 * * * *', duration: 90m}]"), "g.yaml")
    activity = gate_activity(gates[0], datetime(2026, 11, 22, 12, 10, tzinfo=UTC))
    assert activity.active  # 11:00 + 90m and 12:00 + 90m overlap, and so on forever
    quiet, _ = parse_gate_file(gate("[{cron: '0 9 * * *', duration: 1h}]"), "g.yaml")
    off = gate_activity(quiet[0], datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    assert not off.active and off.next_change == datetime(2026, 11, 23, 9, tzinfo=UTC)
    on = gate_activity(quiet[0], datetime(2026, 11, 22, 9, 30, tzinfo=UTC))
    assert on.active and on.next_change == datetime(2026, 11, 22, 10, tzinfo=UTC)


def test_a_cron_that_never_fires_is_an_invalid_gate():
    gates, invalid = parse_gate_file(gate("[{cron: '0 0 30 2 *', duration: 1h}]"), "g.yaml")
    assert gates == [] and "never fires" in invalid[0].message


@pytest.mark.parametrize("text", ["99999999999d", "100000d", "4000d"])
def test_absurd_durations_are_refused(text):
    with pytest.raises(ConfigError, match="longer than"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00+14:00"])
def test_times_at_the_end_of_the_calendar_are_refused(text):
    with pytest.raises(ConfigError, match="is not an RFC 3339 time"):
        parse_time(text, "spec.until")
    gates, invalid = parse_gate_file(gate(until=text), "g.yaml")
    assert gates == [] and invalid
