"""How many objects a render may hold: per source and per pass (`Budget`); a source over its
share fails, with the reason, before anything is applied (pure)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from gitgate.errors import Reason
from gitgate.model import (
    Problem,
    RenderedSource,
)


@dataclass(frozen=True)
class Budget:
    """How many objects one source, and one pass over the whole repo, may render: a repo
    that renders more fails where it is largest instead of exhausting gitgate's memory."""

    per_source: int = 20_000  # GITGATE_RENDER_MAX_OBJECTS
    per_pass: int = 200_000  # GITGATE_PASS_MAX_OBJECTS

    @classmethod
    def from_env(cls) -> Budget:
        source = os.environ.get("GITGATE_RENDER_MAX_OBJECTS", "")
        total = os.environ.get("GITGATE_PASS_MAX_OBJECTS", "")
        return cls(int(source) if source.isdigit() else cls.per_source,
                   int(total) if total.isdigit() else cls.per_pass)



def source_budget(rendered: RenderedSource, budget: Budget) -> RenderedSource:
    if len(rendered.objects) <= budget.per_source:
        return rendered
    return RenderedSource(rendered.source, (), (Problem(
        rendered.source.path, f"{rendered.source.path} renders {len(rendered.objects)} "
        f"objects, more than the {budget.per_source} one source may "
        "(GITGATE_RENDER_MAX_OBJECTS raises the limit); nothing of it is applied",
        rendered.source.path, None, Reason.RENDER_FAILED),))



def within_budget(results: list[RenderedSource], limit: int) -> list[RenderedSource]:
    """Pure: when the repo renders more than `limit` objects in all, its largest sources
    fail (largest first, ties by path, so every pass decides alike) until the rest fit; each
    failure names the largest sources."""
    total = sum(len(r.objects) for r in results)
    if total <= limit:
        return results
    largest = sorted(results, key=lambda r: (-len(r.objects), r.source.path))
    named = ", ".join(f"{r.source.path} ({len(r.objects)})" for r in largest[:3])
    dropped: set[str] = set()
    for result in largest:
        if total <= limit:
            break
        total -= len(result.objects)
        dropped.add(result.source.path)
    return [RenderedSource(r.source, (), (Problem(
        r.source.path, f"the repo renders more objects than the {limit} one pass may "
        f"(GITGATE_PASS_MAX_OBJECTS raises the limit); the largest sources fail first: "
        f"{named}", r.source.path, None, Reason.RENDER_FAILED),))
        if r.source.path in dropped else r for r in results]
