"""An application bundle: the objects that travel together, named after their app."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from gitgate.model.clusterspec import ObjectOverride
from gitgate.model.objects import Manifest, ObjectRef, Problem, Source


@dataclass(frozen=True)
class Bundle:
    name: str
    source: Source
    objects: tuple[Manifest, ...]
    problems: tuple[Problem, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    skipped: tuple[tuple[ObjectRef, str], ...] = ()  # hooks never applied (Helm tests), and why
    digest: str = ""  # of `objects` (bundle.group.bundle_digest), when bundling computed it
    # its override policies that act on other bundles, with those bundles' names
    acts_on: tuple[tuple[ObjectRef, tuple[str, ...]], ...] = ()
    overridden_by: tuple[ObjectRef, ...] = ()  # override policies of other bundles acting on it
    customized: tuple[ObjectOverride, ...] = ()  # per-cluster changes (`clusters:`), per object

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    @property
    def refs(self) -> list[ObjectRef]:
        return sorted(self.object_refs)

    @cached_property
    def object_refs(self) -> tuple[ObjectRef, ...]:
        """Each object's identity, in order (worked out once per bundle)."""
        return tuple(ObjectRef.of(o) for o in self.objects)
