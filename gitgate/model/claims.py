"""Who keeps an object or a bundle name that two folders of the repo claim (pure).

A folder without the right to what it claims (its tenant's rules, `model.tenantrules`)
loses it, and the folder that has the right keeps applying. Between folders with equal
rights, the one whose bundle already holds it live keeps it: the object is in its Bundle
record's inventory, or the name is its Bundle record's. Otherwise nobody can tell which
one is meant, and every claimant fails until the repo says."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from gitgate.model.objects import ObjectRef


@dataclass(frozen=True)
class Holders:
    """What the Bundle records hold live: each recorded bundle name's and each recorded
    object's repo folder (the `source` the record keeps). The objects' are worked out on
    first need (a clash between equals), not on every pass."""

    bundles: Mapping[str, str] = field(default_factory=dict)  # stored bundle name -> folder
    objects_from: Callable[[], Mapping[ObjectRef, str]] = field(default=dict, repr=False,
                                                                compare=False)

    @cached_property
    def objects(self) -> Mapping[ObjectRef, str]:
        return self.objects_from()

    @cached_property
    def key(self) -> tuple[tuple[str, str], ...]:
        """What grouping depends on, to key its memo by."""
        return tuple(sorted(self.bundles.items()))


@dataclass(frozen=True)
class Ruling:
    """Of the folders claiming one thing: the one keeping it (None: none does), and why each
    other folder has no right to it (None: it has, but another keeps it or nobody can
    tell)."""

    keeper: str | None
    losers: Mapping[str, str | None]
    held: bool = False  # the keeper keeps it because its bundle holds it live

    def said(self, path: str) -> str:
        """Why `path` loses, in words after "... is also claimed by OTHERS"."""
        why = self.losers.get(path)
        if why is not None:
            return f"this folder has no right to it ({why})"
        if self.keeper is not None and self.held:
            return f"{self.keeper}'s bundle holds it live (its Bundle record): it stays theirs"
        if self.keeper is not None:
            return f"it is {self.keeper}'s"
        return ""


def arbitrate(paths: list[str], wrong: Callable[[str], str | None],
              held_by: str | None) -> Ruling:
    """Decide between the folders `paths` claiming one thing. `wrong(path)`: why that folder
    has no right to it (None: it has); `held_by`: the folder whose bundle holds it live."""
    paths = sorted(set(paths))
    why = {path: wrong(path) for path in paths}
    entitled = [p for p in paths if why[p] is None]
    keeper: str | None
    if len(entitled) == 1:
        keeper, held = entitled[0], False
    else:
        keeper = held_by if held_by in entitled else None
        held = keeper is not None
    return Ruling(keeper, {p: why[p] for p in paths if p != keeper}, held)
