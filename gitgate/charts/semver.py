"""Chart versions and the ranges Chart.yaml and bundle.yaml may ask for, as helm reads them
(`1.2.3`, `~1.2`, `^1.2.3`, `1.2.x`, `*`, `>=1.0 <2.0`, `1.2 - 1.4`, `a || b`). A version
with a pre-release part is chosen only by a range that names a pre-release. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitgate.errors import ConfigError

_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?"
                      r"(?:\+[0-9A-Za-z.-]+)?$")
_PART = re.compile(r"^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?"
                   r"(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")
_COMPARATOR = re.compile(r"^(>=|<=|!=|==|=|>|<|~>|~|\^)?\s*(.+)$")


@dataclass(frozen=True, order=False)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        """Sorts as semver does: a pre-release before its release; numeric parts first."""
        pre = tuple((0, int(p)) if p.isdigit() else (1, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)


def parse_version(text: str) -> Version | None:
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    major, minor, patch, pre = match.groups()
    return Version(int(major), int(minor or 0), int(patch or 0),
                   tuple(pre.split(".")) if pre else ())


Bound = tuple[str, Version]  # (operator, version): ">=", "<", "=", "!="


def _floor(parts: list[int | None], pre: tuple[str, ...]) -> Version:
    return Version(parts[0] or 0, parts[1] or 0, parts[2] or 0, pre)


def _bump(parts: list[int | None], at: int) -> Version:
    """The first version past the `at`-th part (0: major): the exclusive upper end."""
    values = [p or 0 for p in parts]
    values[at] += 1
    for later in range(at + 1, 3):
        values[later] = 0
    return Version(values[0], values[1], values[2], ("0",))


def _comparator(text: str, range_text: str) -> list[Bound]:
    match = _COMPARATOR.match(text)
    part = _PART.match(match.group(2)) if match else None
    if match is None or part is None:
        raise ConfigError(f"{range_text!r} is not a version or a range")
    operator = match.group(1) or "="
    raw = part.groups()[:3]
    parts: list[int | None] = [None if p is None or p in "xX*" else int(p) for p in raw]
    for index in range(1, 3):  # after a wildcard, the rest are wildcards too
        if parts[index - 1] is None:
            parts[index] = None
    pre = tuple(part.group(4).split(".")) if part.group(4) else ()
    known = next((i for i, p in enumerate(parts) if p is None), 3)  # parts given
    low = _floor(parts, pre)
    if operator in ("=", "=="):
        if known == 0:
            return []  # `*`: anything
        if known == 3:
            return [("=", low)]
        return [(">=", low), ("<", _bump(parts, known - 1))]
    if operator == "!=":
        return [("!=", low)]
    if operator in ("~", "~>"):
        if known == 0:
            return []
        return [(">=", low), ("<", _bump(parts, 0 if known == 1 else 1))]
    if operator == "^":
        if known == 0:
            return []
        first = next((i for i, p in enumerate(parts[:known]) if p), known - 1)
        return [(">=", low), ("<", _bump(parts, min(first, known - 1)))]
    if operator == ">":
        return [(">=", _bump(parts, known - 1))] if known < 3 else [(">", low)]
    if operator == "<=":
        return [("<", _bump(parts, known - 1))] if known < 3 else [("<=", low)]
    return [(operator, low)]  # >=, <


def parse_range(text: str) -> list[list[Bound]]:
    """The alternatives of a range (`||`), each a list of bounds that must all hold.
    ConfigError for what is not a range."""
    alternatives = []
    for alternative in text.split("||"):
        alternative = alternative.strip()
        hyphen = re.match(r"^(\S+)\s+-\s+(\S+)$", alternative)
        if hyphen:
            alternatives.append(_comparator(">=" + hyphen.group(1), text)
                                + _comparator("<=" + hyphen.group(2), text))
            continue
        bounds: list[Bound] = []
        tokens = re.sub(r"(>=|<=|!=|==|=|>|<|~>|~|\^)\s+", r"\1", alternative)
        for token in re.split(r"[\s,]+", tokens):
            if token:
                bounds += _comparator(token, text)
        alternatives.append(bounds)
    return alternatives


def _holds(bound: Bound, version: Version) -> bool:
    operator, limit = bound
    mine, theirs = version.key(), limit.key()
    return {"=": mine == theirs, "!=": mine != theirs, ">": mine > theirs,
            ">=": mine >= theirs, "<": mine < theirs, "<=": mine <= theirs}[operator]


def satisfies(version: Version, alternatives: list[list[Bound]], range_text: str) -> bool:
    if version.pre and "-" not in range_text:
        return False  # a pre-release is chosen only when the range asks for one
    return any(all(_holds(b, version) for b in bounds) for bounds in alternatives)


def best_match(range_text: str, available: list[str]) -> str | None:
    """The highest of `available` (version texts as published) that the range allows."""
    alternatives = parse_range(range_text)
    fitting = [(v.key(), text) for text in available
               if (v := parse_version(text)) is not None
               and satisfies(v, alternatives, range_text)]
    return max(fitting)[1] if fitting else None
