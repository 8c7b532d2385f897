"""What a bundle's rollout and sync persist between passes, and the little of a bundle's
record they read. The inventory carries a `Progression`; the progression steps read any
record that has these attributes (`apply.inventory.Inventory` has them), so they need
nothing of the apply layer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from gitgate.model import ObjectRef


@dataclass(frozen=True)
class Progression:
    rollout: str = ""  # the rollout's state (karmada.waves.RolloutState as JSON)
    hooks: str = ""  # the sync of a bundle with hooks (karmada.syncsteps.HookState as JSON)
    retry: str = ""  # when `gitgate resume` last asked a halted rollout to retry (RFC 3339)


class Recorded(Protocol):
    """A bundle as the last pass recorded it."""

    @property
    def bundle(self) -> str: ...
    @property
    def applied_digest(self) -> str: ...  # of what was last applied (not merely attempted)
    @property
    def progression(self) -> Progression: ...
    def by_ref(self) -> Mapping[ObjectRef, object]: ...  # what was last applied
