"""The loop's state at the end of a turn, built into the one frozen snapshot it publishes
(`status.published.Published`) for the page and `/status`."""

from __future__ import annotations

from datetime import datetime
from types import MappingProxyType

from gitgate.loop.schedule import LoopState
from gitgate.status.published import Published


def published(state: LoopState, at: datetime, *, repo: str, branch: str,
              sharded: bool) -> Published:
    """What this turn of `run` left, as one frozen snapshot."""
    seen = state.observation
    return Published(
        repo=repo, branch=branch, at=at, leading=state.leading, sharded=sharded,
        ready=state.ready, passes=state.passes, git_reachable=state.git_reachable,
        api_reachable=state.api_reachable, lease_problem=state.lease_problem,
        revision=state.revision, last_pass=state.last_pass, last_reason=state.last_reason,
        last_error=state.last_error, next_transition=state.next_transition,
        signature=state.signature, gate_report=state.gate_report, turn=state.turn,
        last_result=state.last_result, observed=seen is not None,
        last_observed=state.last_observed, observe_error=seen.error if seen else "",
        dispatch=MappingProxyType(dict(seen.bundles if seen else {})),
        inventories=MappingProxyType(dict(state.inventories or {})),
        overview=MappingProxyType(dict(state.overview or {})))
