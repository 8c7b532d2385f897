"""A bundle's progressive rollout across member clusters, as `bundle.yaml` (or the
`gitgate.yaml` defaults) declares it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

ON_FAILURE = ("hold", "continue")


@dataclass(frozen=True)
class RolloutSpec:
    waves: tuple[tuple[str, ...], ...]  # cluster names, in order
    bake: timedelta = timedelta(minutes=5)
    progress_deadline: timedelta = timedelta(minutes=10)
    on_failure: str = "hold"  # or "continue"

    def as_dict(self) -> dict[str, Any]:
        return {"waves": [list(w) for w in self.waves], "bake": seconds_text(self.bake),
                "progressDeadline": seconds_text(self.progress_deadline),
                "onFailure": self.on_failure}


def seconds_text(value: timedelta) -> str:
    return f"{int(value.total_seconds())}s"
