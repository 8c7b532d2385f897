"""What the loop knew at the end of a turn, published whole for the page and `/status`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.loop.schedule import LoopState
from gitgate.passes.karmadareads import Observation
from gitgate.source.gateguard import GateReport
from gitgate.source.signatures import Signature


@dataclass(frozen=True)
class Published:
    """What the loop knew at the end of one turn of `run` (a pass and the read of Karmada
    after it, or a standby's probe), published whole for readers on other threads: the web
    page renders one of these, never the state a pass is changing."""

    at: datetime | None = None  # None: nothing published yet
    leading: bool = False
    revision: str | None = None
    last_error: str = ""
    observation: Observation | None = None
    inventories: Mapping[str, Inventory] = field(default_factory=lambda: MappingProxyType({}))
    overview: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    signature: Signature | None = None
    gate_report: GateReport | None = None
    failed: frozenset[str] = frozenset()  # bundles the last pass failed



def published(state: LoopState, at: datetime) -> Published:
    """What this turn of `run` left, as one frozen snapshot."""
    result = state.last_result
    return Published(
        at=at, leading=state.leading, revision=state.revision,
        last_error=state.last_error, observation=state.observation,
        inventories=MappingProxyType(dict(state.inventories or {})),
        overview=MappingProxyType(dict(state.overview or {})), signature=state.signature,
        gate_report=state.gate_report,
        failed=frozenset(b.bundle for b in (result.bundles if result else ()) if b.failed))
