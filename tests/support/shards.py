"""Replica names for the sharding tests: chosen so the bundles are shared, not left to
chance."""

from __future__ import annotations

from gitgate.model.shardmap import owner


def sharing_identities(apps: list[str]) -> tuple[str, str]:
    """Two replica names under which each owns at least a quarter of `apps` (with random
    names, n apps would all land on one replica once in 2**(n-1) runs)."""
    names = (f"replica-{i}" for i in range(100))
    first = next(names)
    for second in names:
        share = sum(owner(app, (first, second)) == first for app in apps)
        if len(apps) // 4 <= share <= len(apps) - len(apps) // 4:
            return first, second
    raise AssertionError("no two names share the apps")
