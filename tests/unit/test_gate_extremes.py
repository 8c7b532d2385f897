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


# ---------------------------------------------------------------- standard cron only (issue 24)
@pytest.mark.parametrize(("cron", "why"), [
    ("0 0 18 * * 5", "fields"),  # seconds-first: croniter would read it seconds-last
    ("0 18 * * 5 2027", "fields"),  # a year: crashed plan/check/gates with a traceback
    ("0 0 18 * * 5 2027", "fields"),
    ("R 18 * * *", "minute"),  # random: a different verdict for the same instant
    ("H 18 * * *", "minute"),
    ("0 18 L * *", "day of month"), ("0 18 15W * *", "day of month"),
    ("0 18 * * 5L", "day of week"), ("0 18 * * 5#2", "day of week"), ("0 18 ? * 5", "day of"),
    ("60 18 * * *", "minute"), ("0 24 * * *", "hour"), ("0 18 * 13 *", "month"),
    ("0 18 * * 8", "day of week"), ("0 18 5-1 * *", "backwards"), ("*/0 * * * *", "step"),
    ("0 18 * * ٥", "day of week"), ("@reboot", "@"), ("", "fields"), ("0,,5 * * * *", "empty"),
])
def test_only_standard_five_field_cron_is_a_window(cron, why):
    gates, invalid = parse_gate_file(gate(f"[{{cron: {cron!r}, duration: 1h}}]"), "g.yaml")
    assert gates == [] and len(invalid) == 1, cron
    assert "standard cron" in invalid[0].message and why in invalid[0].message, invalid


@pytest.mark.parametrize("cron", ["0 18 * * 5", "*/15 9-17 * * mon-fri", "0 0 1 jan,jul *",
                                  "30 2 * * 0,7", "@daily", "@weekly", "@hourly", "@yearly"])
def test_standard_cron_is_still_read(cron):
    gates, invalid = parse_gate_file(gate(f"[{{cron: {cron!r}, duration: 1h}}]"), "g.yaml")
    assert invalid == [] and len(gates) == 1


BERLIN_0230 = gate("[{cron: '30 2 * * *', duration: 1h, timeZone: Europe/Berlin}]")


@pytest.mark.parametrize("minutes", [0, 1, 20, 40, 59])
def test_a_window_started_in_the_repeated_autumn_hour_lasts_its_duration(minutes):
    """On 2026-10-25 Berlin's clocks go from 03:00 CEST back to 02:00 CET: the window that
    started at 02:30 CEST (00:30 UTC) lasts one real hour, though 40 minutes later the wall
    clock reads 02:10 CET, 'before' 02:30."""
    gates, _ = parse_gate_file(BERLIN_0230, "g.yaml")
    started = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert gate_activity(gates[0], started + timedelta(minutes=minutes)).active


def test_a_window_is_off_before_it_starts_and_after_the_fold_ends():
    gates, _ = parse_gate_file(BERLIN_0230, "g.yaml")
    before = gate_activity(gates[0], datetime(2026, 10, 25, 0, 29, tzinfo=UTC))
    assert not before.active and before.next_change == datetime(2026, 10, 25, 0, 30,
                                                                tzinfo=UTC)
    # croniter fires at both 02:30s of the repeated hour: the second start (01:30 UTC) keeps
    # the window on until 02:30 UTC (longer, never shorter: a freeze fails closed)
    assert not gate_activity(gates[0], datetime(2026, 10, 25, 2, 31, tzinfo=UTC)).active
    assert not gate_activity(gates[0], datetime(2026, 10, 24, 1, 31, tzinfo=UTC)).active


def test_a_window_around_the_spring_gap_starts_once_the_clock_jumps():
    gates, _ = parse_gate_file(BERLIN_0230, "g.yaml")  # 02:30 does not exist on 2026-03-29
    assert not gate_activity(gates[0], datetime(2026, 3, 29, 0, 59, tzinfo=UTC)).active
    assert gate_activity(gates[0], datetime(2026, 3, 29, 1, 30, tzinfo=UTC)).active
