"""Plain text tables: columns padded to their widest cell, like kubectl's."""

from __future__ import annotations

from datetime import datetime

from gitgate.timespec import rfc3339 as format_time


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def rfc3339(value: datetime | None) -> str | None:
    return format_time(value) if value else None


def one_line(text: str, limit: int = 120) -> str:
    return text.replace("\n", " ")[:limit]
