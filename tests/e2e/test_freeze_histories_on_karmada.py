"""The property suite's histories (`tests/support/freezehistories.py`) against a real
Karmada, with every step of the emulator's run (customizations, platform overrides,
`dependsOn`, `gitgate approve`, freezes pushed mid-pass, rollouts in waves with health flips):
the same checks after every pass, and after every step each member cluster is read until it
runs what the reference model says (member2 with the bundles' `clusters:` values, member1 with
the platform's overrides; a suspended bundle's members, and those a rollout has not released,
keep what they had). The members run no controllers: a rolling app carries a Deployment whose
status the history writes on each member (Available, or Unhealthy when a health flip says so),
and waits until Karmada reflects it. A smaller run than `make test`'s:
`GITGATE_E2E_HISTORIES` and `GITGATE_E2E_HISTORY_STEPS` run more, and
`GITGATE_PROPERTY_SEED` other histories (unset: the same every run)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, seed, settings

from gitgate.apiserver.transport import load_client
from tests.support.freezehistories import SEED, FreezeHistories
from tests.support.kubetarget import RecordingKube

pytestmark = pytest.mark.e2e

HISTORIES = int(os.environ.get("GITGATE_E2E_HISTORIES", "4"))
STEPS = int(os.environ.get("GITGATE_E2E_HISTORY_STEPS", "8"))


class OnKarmada(FreezeHistories):
    def teardown(self) -> None:
        super().teardown()
        for member in (self.members or {}).values():
            member.delete("v1", "Namespace", "", self.ns)


def test_members_run_what_the_model_says_over_generated_histories(karmada, tools, tmp_path):
    OnKarmada.cluster = RecordingKube(load_client(str(karmada.kubeconfig)))
    OnKarmada.tools, OnKarmada.tmp, OnKarmada.members = tools, tmp_path, karmada.members
    OnKarmada.kubeconfig = str(karmada.kubeconfig)
    OnKarmada.TestCase.settings = settings(
        max_examples=HISTORIES, stateful_step_count=STEPS, deadline=None, database=None,
        suppress_health_check=list(HealthCheck), print_blob=True, derandomize=SEED is None)
    if SEED is not None:
        seed(int(SEED))(OnKarmada.TestCase)
    OnKarmada.TestCase().runTest()
    counts = OnKarmada.counts
    assert counts["steps"] > 0, "no history took a step"
