"""Two `gitgate run` processes against one API server, as `replicas: 2` runs them: both are
ready (readiness means "can serve", not "leads"), only one leads, and when the leader gets
SIGTERM it hands the Lease over so the standby leads within seconds, not a lease duration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT
from tests.support.http import free_port, get, until
from tests.support.looping import Upstream

pytestmark = pytest.mark.integration


def leading(port: int) -> bool:
    status, body = get(f"http://127.0.0.1:{port}/status")
    return status == 200 and json.loads(body)["leading"]


def test_both_replicas_ready_and_sigterm_hands_over_the_lease(kube, tmp_path):
    upstream = Upstream(tmp_path, kube)
    ports = [free_port(), free_port()]
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    replicas = []
    scratch = [tmp_path / "tmp-a", tmp_path / "tmp-b"]  # each process's TMPDIR
    for index, port in enumerate(ports):
        scratch[index].mkdir()
        replicas.append(subprocess.Popen(
            [sys.executable, "-m", "gitgate.cli", "run", "--repo", upstream.url,
             "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id,
             "--listen", f"127.0.0.1:{port}", "--interval", "1s", "--lease-duration", "15",
             "--cache-dir", str(tmp_path / f"cache-{index}")],
            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=logs[index].open("w"),
            env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(scratch[index])}))
    try:
        for port in ports:
            until(lambda p=port: get(f"http://127.0.0.1:{p}/readyz")[0] == 200, 60,
                  f"replica on {port} ready")
        until(lambda: sum(leading(p) for p in ports) == 1, 30, "one leader")
        leader = 0 if leading(ports[0]) else 1
        standby = 1 - leader
        time.sleep(1.5)  # a few standby loops: still ready, still not leading
        assert get(f"http://127.0.0.1:{ports[standby]}/readyz")[0] == 200
        assert not leading(ports[standby])

        replicas[leader].send_signal(signal.SIGTERM)
        took = until(lambda: leading(ports[standby]), 5,
                     "the standby leads after the leader's SIGTERM (the Lease lasts 15 s)")
        assert replicas[leader].wait(10) == 0
        assert list(scratch[leader].iterdir()) == []  # its scratch folders went with it
        assert any(scratch[standby].iterdir())  # (the one still running has them)
        assert took < 5
        leader_log = logs[leader].read_text()
        standby_log = logs[standby].read_text()
        assert "became leader" in leader_log and "shutting down" in leader_log
        assert "standing by" in standby_log and "became leader" in standby_log
        assert "Traceback" not in leader_log + standby_log
    finally:
        for process in replicas:
            if process.poll() is None:
                process.terminate()
                process.wait(10)
