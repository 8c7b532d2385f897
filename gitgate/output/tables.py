"""Plain text tables: columns padded to their widest cell, like kubectl's."""

from __future__ import annotations

from datetime import datetime

from gitgate.output.console import single_line
from gitgate.timespec import rfc3339 as format_time


def table(rows: list[list[str]]) -> str:
    """Cells are escaped to one line each: a name with a newline never forges a row."""
    rows = [[single_line(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def cell(value: object) -> str:
    """A value in a table cell: yes / no, `-` for none."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None or value == "" else str(value)


def rfc3339(value: datetime | None) -> str | None:
    return format_time(value) if value else None


def one_line(text: str, limit: int = 60) -> str:
    """The text on one line, cut to `limit` characters with an ellipsis (tables never wrap;
    `-o wide` and `-o json` carry the full text)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def parse_stamp(text: str | None) -> datetime | None:
    """An inventory's RFC 3339 text back to a time (None when empty or unreadable)."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
