"""The promise over generated histories (`tests/support/freezehistories.py`): real passes of
gitgate against the API emulator after each generated commit, checked against a reference
model that imports nothing of gitgate's planner.

`make test` runs a bounded number of histories, the same ones every run (Hypothesis
derandomized); `GITGATE_PROPERTY_EXAMPLES` runs more and `GITGATE_PROPERTY_SEED` others (both
are printed at the end of the run)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, seed, settings

from tests.support.freezehistories import EXAMPLES, SEED, STEPS, FreezeHistories

pytestmark = pytest.mark.integration



def test_no_history_writes_a_frozen_object(kube, tools, tmp_path):
    FreezeHistories.cluster, FreezeHistories.tools, FreezeHistories.tmp = (
        kube.cluster, tools, tmp_path)
    FreezeHistories.members = None
    FreezeHistories.kubeconfig, FreezeHistories.emulator = kube.kubeconfig, kube.emulator
    FreezeHistories.TestCase.settings = settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, database=None,
        suppress_health_check=list(HealthCheck), print_blob=True, derandomize=SEED is None)
    if SEED is not None:
        seed(int(SEED))(FreezeHistories.TestCase)
    FreezeHistories.TestCase().runTest()
