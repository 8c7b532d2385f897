"""An analysis query as a template: `{{cluster}}`, `{{bundle}}` and `{{revision}}` may stand
only inside a PromQL string literal ("..." or '...'), and what they stand for is escaped
for one. A name can then never close the literal and add to the query, whatever it holds."""

from __future__ import annotations

import re
from collections.abc import Mapping

from gitgate.model.analysisspec import PLACEHOLDERS

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def template_problem(query: str) -> str:
    """Why `query` is not a usable template ("" when it is): an unknown placeholder, one
    outside a "..." or '...' literal (a `raw` literal cannot escape anything), or a literal
    left open."""
    quote = ""
    index = 0
    while index < len(query):
        found = _PLACEHOLDER.match(query, index)
        if found is not None:
            name = found.group(1)
            if name not in PLACEHOLDERS:
                return (f"{{{{{name}}}}} is not a placeholder (there are "
                        f"{', '.join('{{' + p + '}}' for p in PLACEHOLDERS)})")
            if quote not in ('"', "'"):
                return (f"{{{{{name}}}}} stands outside a \"...\" string literal: write it "
                        f"inside one, as in cluster=\"{{{{{name}}}}}\"")
            index = found.end()
            continue
        char = query[index]
        if quote in ('"', "'") and char == "\\":
            index += 2
            continue
        if quote and char == quote:
            quote = ""
        elif not quote and char in "\"'`":
            quote = char
        index += 1
    return "a string literal is left open" if quote else ""


def escaped(value: str) -> str:
    """`value` as the inside of a PromQL "..." or '...' literal."""
    return "".join(_ESCAPES.get(c, c) for c in value)


def substituted(query: str, values: Mapping[str, str]) -> str:
    """The query with each placeholder replaced by its value, escaped (`query` passed
    `template_problem`)."""
    return _PLACEHOLDER.sub(lambda m: escaped(values[m.group(1)]), query)
