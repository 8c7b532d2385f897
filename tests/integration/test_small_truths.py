"""Issue 28, item 11 (in part): small things that told a user nothing, or the wrong thing. The
real CLI, in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, REPO_ROOT

pytestmark = pytest.mark.integration


def gitgate(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT, env=env)


def test_apply_timeout_without_wait_is_an_error_not_ignored(tmp_path):
    done = gitgate("apply", str(EXAMPLES), "--timeout", "1m",
                   "--kubeconfig", str(tmp_path / "absent"))
    assert done.returncode == 2
    assert "--timeout is how long --wait waits: add --wait, or drop --timeout" in done.stderr


def test_status_without_any_kubeconfig_says_what_to_do(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    done = gitgate("status", env=env)
    assert done.returncode == 2
    assert "not running in a pod: pass --kubeconfig, set KUBECONFIG" in done.stderr
    assert "Service host/port" not in done.stderr


def test_the_help_quotes_the_globs_it_shows():
    shown = gitgate("--help").stdout
    assert "gitgate pause 'shop/*'" in shown and "gitgate resume 'shop/*'" in shown
    assert " shop/* " not in shown
