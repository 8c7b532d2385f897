"""A rollout's analysis as a bundle's state carries it: each check on each released cluster
of the current wave, with its failures and what it last measured (from the rollout's
recorded state)."""

from __future__ import annotations

from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.karmada.waves import RolloutState
from gitgate.progression.analysis import read_record
from gitgate.timespec import rfc3339


def analysis_rows(inv: Inventory) -> list[dict[str, Any]]:
    """One row per check and cluster: `check`, `cluster`, `failures`, `passing` (the last
    measurement passed), `measured`, `said`."""
    state = RolloutState.from_json(inv.progression.rollout)
    if state is None or not state.analysis:
        return []
    rows = []
    for key, tally in sorted(read_record(state.analysis).items()):
        check, _, cluster = key.partition("/")
        rows.append({"check": check, "cluster": cluster, "failures": tally.failures,
                     "passing": tally.ok, "measured": rfc3339(tally.measured),
                     "said": tally.note})
    return rows
