"""Histories the property suite found failing, shrunk, kept as ordinary tests: each is the
sequence of commits (and a pass after each) that broke the promise, and each still runs
every check of `tests/support/freezehistories.py` after every pass."""

from __future__ import annotations

import pytest

from tests.support.freezehistories import FreezeHistories

pytestmark = pytest.mark.integration


@pytest.fixture
def history(kube, tools, tmp_path):
    if kube.emulator is None:
        pytest.skip("reads the emulator's request log and objects")
    FreezeHistories.kube, FreezeHistories.tools, FreezeHistories.tmp = kube, tools, tmp_path
    machine = FreezeHistories()
    yield machine
    machine.teardown()


def test_a_parent_kustomization_taking_apps_in_again_does_not_prune_them(history):
    """The parent's record, kept while a held app claimed some of its objects, still listed
    the objects two other apps had taken over, with the content it had written: taking them
    in again saw them unchanged and wrote nothing, and pruning the apps that left Git deleted
    them."""
    history.swallow_or_release()
    history.pause_folder(0)
    history.swallow_or_release()
    history.swallow_or_release()
    history.the_cluster_holds_what_the_model_says_is_live()
