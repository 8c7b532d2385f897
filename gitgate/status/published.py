"""`Published`: what a running loop knew at the end of one turn, as plain frozen data. The
loop builds one per turn; the web page and `/status` render from it and nothing else of the
loop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.apply.work import PassResult
from gitgate.karmada.dispatch import Dispatch
from gitgate.passes.shards import Turn
from gitgate.source.gateguard import GateReport
from gitgate.source.signatures import Signature


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Published:
    """One turn of `run` (a pass and the read of Karmada after it, or a standby's probe),
    whole: readers on other threads see one of these, never the state a pass is changing.
    `at` is None until the first turn ends."""

    repo: str = ""  # the followed repo, without credentials
    branch: str = ""
    at: datetime | None = None
    leading: bool = False
    sharded: bool = False  # `run --shard`: this replica plans a share
    ready: bool = False
    passes: int = 0
    git_reachable: bool = False
    api_reachable: bool = False
    lease_problem: str | None = None
    revision: str | None = None  # the last revision reconciled without failure
    last_pass: datetime | None = None
    last_reason: str = ""
    last_error: str = ""
    next_transition: datetime | None = None
    signature: Signature | None = None
    gate_report: GateReport | None = None
    turn: Turn | None = None  # with --shard: this replica's share
    last_result: PassResult | None = None
    observed: bool = False  # Karmada was read (what it reports, or why it could not be)
    last_observed: datetime | None = None
    observe_error: str = ""
    dispatch: Mapping[str, Dispatch] = field(default_factory=_empty)  # what Karmada reports
    inventories: Mapping[str, Inventory] = field(default_factory=_empty)
    overview: Mapping[str, Any] = field(default_factory=_empty)

    @property
    def failed(self) -> frozenset[str]:
        """The bundles the last pass failed."""
        result = self.last_result
        return frozenset(b.bundle for b in (result.bundles if result else ()) if b.failed)

    @property
    def origin(self) -> str:
        return f"{self.repo} ({self.branch})"
