"""The names closest to one a user typed, for the error that says it matched nothing. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest_hint(typed: str, names: Iterable[str], what: str = "bundles") -> str:
    """`; closest: a, b` (difflib), else the first names, else that there are none."""
    known = sorted(set(names))
    close = difflib.get_close_matches(typed, known, n=3, cutoff=0.5)
    if close:
        return f"; closest: {', '.join(close)}"
    if not known:
        return f"; the repo has no {what}"
    return f"; the {what} are: {', '.join(known[:10])}{', …' if len(known) > 10 else ''}"
