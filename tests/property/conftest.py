"""The property suite says which histories it ran, so a failure can be run again."""

from __future__ import annotations

import pytest

from tests.support.freezehistories import FreezeHistories


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    from tests.support.freezehistories import EXAMPLES, SEED, STEPS

    counts = FreezeHistories.counts
    if counts["histories"]:
        terminalreporter.write_line(
            f"freeze histories: seed {SEED or 'fixed'} (GITGATE_PROPERTY_SEED), up to {EXAMPLES} "
            f"histories of {STEPS} steps (GITGATE_PROPERTY_EXAMPLES, _STEPS): ran "
            f"{counts['histories']} histories, {counts['steps']} steps, {counts['passes']} "
            f"passes ({counts['approvals']} approvals, {counts['mid-pass']} freezes pushed "
            f"mid-pass, {counts['waves']} rollout waves released, {counts['halts']} rollouts "
            "halted)")


@pytest.fixture
def history(kube, tools, tmp_path):
    FreezeHistories.cluster, FreezeHistories.tools, FreezeHistories.tmp = (
        kube.cluster, tools, tmp_path)
    FreezeHistories.members = None
    FreezeHistories.kubeconfig, FreezeHistories.emulator = kube.kubeconfig, kube.emulator
    machine = FreezeHistories()
    yield machine
    machine.teardown()
