"""Durations ('1h30m', '2d') and RFC 3339 times, as flags and gate files write them. A value
that cannot be used raises ConfigError naming what was given and what would do."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from gitgate.errors import ConfigError

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(d|h|m|s)")
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> timedelta:
    """'62h', '1h30m', '90m', '2d', '45s' (Go durations, plus days)."""
    text = str(text).strip()
    if not text or _DURATION_PART.sub("", text):
        raise ConfigError(f"duration {text!r} is not like 62h, 1h30m or 2d")
    seconds = sum(float(n) * _UNITS[u] for n, u in _DURATION_PART.findall(text))
    if seconds <= 0:
        raise ConfigError(f"duration {text!r} must be positive")
    if seconds > MAX_DURATION.total_seconds():
        raise ConfigError(f"duration {text!r} is longer than {MAX_DURATION.days} days; use an "
                          "until time for anything longer")
    return timedelta(seconds=seconds)


MAX_DURATION = timedelta(days=3660)  # ten years and a bit: longer is a typo


def parse_time(text: Any, what: str) -> datetime:
    try:
        value = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
        if value.tzinfo is not None:
            value.astimezone(UTC) + MAX_DURATION  # far enough from the end of the calendar
    except (ValueError, OverflowError):
        raise ConfigError(f"{what} {text!r} is not an RFC 3339 time like "
                       "2026-11-30T18:00:00Z") from None
    if value.tzinfo is None:
        raise ConfigError(f"{what} {text!r} needs a time zone offset (Z or +01:00)")
    return value.astimezone(UTC)


def duration_flag(text: str, flag: str) -> timedelta:
    """A duration flag (`--resync 10m`), its error naming the flag."""
    try:
        return parse_duration(text)
    except ConfigError as exc:
        raise ConfigError(f"{flag}: {exc.message}") from None


def rfc3339(moment: datetime) -> str:
    """`2026-11-22T18:00:00Z`: how gitgate writes a time (gates, inventories, output): UTC,
    to the second."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def age(moment: datetime | None, now: datetime) -> str:
    """How long ago, kubectl-style: `45s`, `5m`, `3h`, `2d`, `1y` (`-` when unknown; a time in
    the future reads `in 5m`)."""
    if moment is None:
        return "-"
    seconds = int((now - moment).total_seconds())
    ahead = seconds < 0
    seconds = abs(seconds)
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "m" else 1):
            text = f"{seconds // size}{unit}"
            break
    else:
        text = f"{seconds}s"
    return f"in {text}" if ahead else text


def duration_text(span: timedelta) -> str:
    """`1h30m`, `45s`: a duration as a gate file or bundle.yaml would write it."""
    hours, rest = divmod(int(span.total_seconds()), 3600)
    minutes, seconds = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (seconds, "s"))
                   if n) or "0s"
