"""When a gate is active. Windows start at each cron time in their IANA zone (so 18:00 stays
18:00 local across DST changes) and last `duration` of real elapsed time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from gitgate.model import Gate, Window


@dataclass(frozen=True)
class Activity:
    active: bool
    next_change: datetime | None  # when `active` flips next, None if never
    since: datetime | None = None  # when the holding began, where known


FOLD_REACH = timedelta(hours=3)  # more than any zone's clock change (at most 2 hours)


def _latest_start(window: Window, zone: ZoneInfo, now: datetime) -> datetime:
    """The real time of the latest start at or before `now`.

    Off a clock change, one cron step back from the local time is it. Near one, local times
    no longer run with real time (in the autumn an hour repeats: 02:30 CEST comes after
    02:10 CET on the wall), so the starts from before the change up to `now` are walked in
    real time: a bounded walk over at most a few hours of starts."""
    local_now = now.astimezone(zone)
    before, after = now - FOLD_REACH, now + FOLD_REACH
    if before.astimezone(zone).utcoffset() == after.astimezone(zone).utcoffset():
        back = croniter(window.cron, local_now + timedelta(seconds=1))  # a start at `now`
        previous: datetime = back.get_prev(datetime)
        return previous.astimezone(UTC)
    walk = croniter(window.cron, (before - FOLD_REACH).astimezone(zone))
    first: datetime = walk.get_prev(datetime)
    latest = first.astimezone(UTC)
    walk = croniter(window.cron, latest.astimezone(zone))
    while True:
        following: datetime = walk.get_next(datetime)
        start = following.astimezone(UTC)
        if start > now:
            return latest
        latest = max(latest, start)


def _window_cover(window: Window, now: datetime) -> tuple[datetime | None, datetime]:
    """(end of the occurrences covering `now` or None, start of the next occurrence).

    Every occurrence lasts the same real time, so of those that started by `now` the latest
    ends last: one step back is enough, whatever the cron's frequency or the duration (a
    started window always lasts its duration, across a clock change too)."""
    zone = ZoneInfo(window.time_zone)
    end = _latest_start(window, zone, now) + window.duration
    ahead = croniter(window.cron, now.astimezone(zone))
    nxt = ahead.get_next(datetime).astimezone(UTC)
    while nxt <= now:  # in a repeated hour the wall clock's next may lie in the real past
        nxt = ahead.get_next(datetime).astimezone(UTC)
    return (end if end > now else None), nxt


def window_activity(windows: tuple[Window, ...], now: datetime) -> Activity:
    """Active inside any window; next change is the end of the covering occurrences (chained
    through overlapping ones) or the next start."""
    covers = [_window_cover(w, now) for w in windows]
    ends = [end for end, _ in covers if end is not None]
    if ends:
        since = min(end - w.duration for w, (end, _) in zip(windows, covers, strict=True)
                    if end is not None)
        end = max(ends)
        for _ in range(100):  # an occurrence starting before `end` extends the window
            later = [e for e, _ in (_window_cover(w, end) for w in windows) if e is not None]
            if not later or max(later) <= end:
                break
            end = max(later)
        return Activity(True, end, since)
    return Activity(False, min(start for _, start in covers))


def gate_activity(gate: Gate, now: datetime) -> Activity:
    """A gate is active when `until` has not passed and, if it has windows, inside one."""
    now = now.astimezone(UTC)
    if gate.until is not None and now >= gate.until:
        return Activity(False, None)
    if not gate.windows:
        return Activity(True, gate.until, gate.paused_at)
    activity = window_activity(gate.windows, now)
    change = activity.next_change
    if gate.until is not None and (change is None or gate.until < change):
        return Activity(activity.active, gate.until if activity.active else None,
                        activity.since)
    return activity
