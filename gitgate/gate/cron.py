"""Standard cron only: five fields (minute hour day-of-month month day-of-week) with numbers,
`*`, ranges, steps, lists and English month and day names, or one of the usual @-macros.
croniter also reads seconds, years, `L`, `W`, `#`, `?` and random `R`/`H` fields; a gate must
mean the same to every reader and at every evaluation, so those are refused. Pure."""

from __future__ import annotations

MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                    "@hourly"})
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, lowest, highest, names counted from `lowest`)
FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day of month", 1, 31, ()),
    ("month", 1, 12, MONTHS), ("day of week", 0, 7, DAYS))


def _value(text: str, low: int, high: int, names: tuple[str, ...]) -> int | None:
    if text.isdigit() and text.isascii():
        number = int(text)
        return number if low <= number <= high else None
    lowered = text.lower()
    return names.index(lowered) + low if lowered in names else None


def _item_problem(item: str, field: tuple[str, int, int, tuple[str, ...]]) -> str | None:
    name, low, high, names = field
    base, slash, step = item.partition("/")
    if slash and not (step.isdigit() and step.isascii() and 0 < int(step) <= high + 1):
        return f"the {name} step {step!r} is not a whole number from 1 to {high + 1}"
    if base == "*":
        return None
    first, dash, last = base.partition("-")
    values = [_value(first, low, high, names)] + ([_value(last, low, high, names)] if dash
                                                 else [])
    if any(v is None for v in values):
        allowed = f"{low}-{high}" + (f" or {names[0]}-{names[-1]}" if names else "")
        return f"the {name} {base!r} is not {allowed}"
    if dash and values[0] > values[1]:  # type: ignore[operator]
        return f"the {name} range {base!r} runs backwards"
    return None


def cron_problem(cron: object) -> str | None:
    """Why `cron` is not a standard five-field cron expression or @-macro, or None."""
    if not isinstance(cron, str):
        return "must be a string"
    text = cron.strip()
    if text.startswith("@"):
        return None if text.lower() in MACROS else (
            f"{text!r} is not one of {', '.join(sorted(MACROS))}")
    fields = text.split()
    if len(fields) != 5:
        return (f"has {len(fields)} fields; a gate's cron has exactly five (minute hour "
                "day-of-month month day-of-week), no seconds and no year")
    for part, field in zip(fields, FIELDS, strict=True):
        for item in part.split(","):
            problem = _item_problem(item, field) if item else f"the {field[0]} has an empty item"
            if problem:
                return problem
    return None
