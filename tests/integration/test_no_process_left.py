"""The run's check that no process is left behind (tests/conftest.py, `no_process_left`):
a child still running and a daemon that detached itself (found by the mark in its
environment) are both named, and stopped."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from tests.support.daemons import RUN_MARK, processes_left, stop

pytestmark = pytest.mark.integration


def test_a_child_and_a_detached_daemon_are_named_then_stopped(tmp_path):
    mark = uuid.uuid4().hex
    env = {**os.environ, RUN_MARK: mark}
    child = subprocess.Popen(["sleep", "61"], env=env)
    subprocess.run(["sh", "-c", "sleep 62 >/dev/null 2>&1 &"], env=env, check=True)
    try:
        left = processes_left(mark, timeout=0.2)
        assert any(line.startswith(f"{child.pid} sleep sleep 61") for line in left), left
        assert any(line.endswith("sleep 62") for line in left), left
    finally:
        stop(mark)
    assert child.wait(timeout=5) is not None
    assert processes_left(mark, timeout=5) == []
