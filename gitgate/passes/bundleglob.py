"""`--bundle GLOB`: which bundles a command or a pass selects."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

from gitgate.errors import ConfigError
from gitgate.model.nearby import closest_hint


def matches(name: str, bundle_glob: str | None) -> bool:
    """The `--bundle GLOB` scope: no glob selects every bundle."""
    return bundle_glob is None or fnmatch.fnmatchcase(name, bundle_glob)


def selected(names: list[str], bundle_glob: str | None, said: str = "--bundle") -> list[str]:
    """The names `--bundle GLOB` selects. A glob that selects nothing is an error naming the
    closest bundle names (a typo must not pass for "nothing to do"). Raises ConfigError."""
    chosen = [name for name in names if matches(name, bundle_glob)]
    if bundle_glob is None or chosen:
        return chosen
    raise ConfigError(f"{said} {bundle_glob!r} matches no bundle"
                      f"{closest_hint(bundle_glob, names)} (`gitgate plan` lists them all)")


def scope_of_glob(bundle_glob: str | None) -> Callable[[str], bool] | None:
    """The bundles a pass may touch (None: all of them)."""
    return None if bundle_glob is None else (lambda name: matches(name, bundle_glob))
