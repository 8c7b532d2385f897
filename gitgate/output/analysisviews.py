"""A rollout's analysis as `describe` shows it (the rows come from the bundle's state)."""

from __future__ import annotations

from gitgate.apply.inventory import Inventory
from gitgate.status.analysisrecord import analysis_rows


def analysis_lines(inv: Inventory) -> list[str]:
    """`describe`'s Analysis section (none when the wave has measured nothing)."""
    rows = analysis_rows(inv)
    return [] if not rows else ["Analysis:"] + [
        f"  {r['check']} on {r['cluster']}: {'passing' if r['passing'] else 'failing'}, "
        f"{r['failures']} failure(s); last {r['measured']}: {r['said']}" for r in rows]
