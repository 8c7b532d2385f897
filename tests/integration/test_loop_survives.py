"""`gitgate run` ends only on SIGTERM: any failure of a fetch or a pass, however many in a row,
is classified, said and retried with a capped back-off; a Lease it cannot use makes the
replica unready and says why."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from datetime import timedelta

import pytest

from gitgate.errors import Reason
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings, backoff
from gitgate.source.git import GitSource
from tests.support.http import free_port
from tests.support.looping import T0, Clock, Upstream, start_run, terminate, wait_for

pytestmark = pytest.mark.integration


def test_the_back_off_stops_at_its_cap_for_any_number_of_failures():
    base, cap = timedelta(seconds=5), timedelta(minutes=5)
    assert [backoff(n, base, cap).total_seconds() for n in (0, 1, 2, 3, 7, 8)] == [
        5, 5, 10, 20, 300, 300]
    assert backoff(10_000, base, cap) == cap  # 2**9999 seconds would overflow a timedelta


def test_a_hundred_failed_fetches_in_a_row_keep_the_loop_running(kube, tools, tmp_path):
    """A Git server that stays away: each fetch fails as SourceFailed, the next try is never
    later than the cap, and the loop is still there to fetch when it comes back."""
    clock = Clock(T0)
    source = GitSource(f"file://{tmp_path}/not-there.git", "main", tmp_path / "cache")
    settings = LoopSettings(interval=timedelta(minutes=1), backoff_base=timedelta(seconds=5),
                            backoff_cap=timedelta(minutes=5))
    loop = Reconciler(source, kube.cluster, tools, settings, clock=clock)
    for _ in range(100):
        assert loop.tick() is None
        clock.advance(minutes=1)
    assert loop.state.failures == 100
    assert loop.state.last_error.startswith(f"{Reason.SOURCE_FAILED}:")
    assert loop.state.retry_at is not None
    assert loop.state.retry_at - clock.now <= settings.backoff_cap


def test_a_checkout_that_cannot_be_written_is_a_failed_fetch(kube, tools, tmp_path):
    """What the disk refuses (here a checkout folder that is a file) is a SourceFailed with
    the path, not an error that escapes the fetch."""
    upstream = Upstream(tmp_path, kube)
    (tmp_path / "cache").write_text("not a folder\n")
    source = GitSource(upstream.url, "main", tmp_path / "cache" / "repo")
    loop = Reconciler(source, kube.cluster, tools, LoopSettings(), clock=Clock(T0))
    assert loop.tick() is None
    assert loop.state.last_error.startswith(f"{Reason.SOURCE_FAILED}:")
    assert str(tmp_path / "cache") in loop.state.last_error


def test_an_error_outside_a_pass_is_said_and_the_loop_goes_on(kube, tools, tmp_path):
    """Even a failure of the leadership check itself (here: it raises twice) does not end
    `run`: it is logged, counted and retried; only `stop` ends it."""
    upstream = Upstream(tmp_path, kube)
    source = GitSource(upstream.url, "main", tmp_path / "cache")
    loop = Reconciler(source, kube.cluster, tools, LoopSettings(
        interval=timedelta(seconds=0.2), backoff_base=timedelta(seconds=0.05)))
    asked = []

    def is_leader() -> bool:
        asked.append(1)
        if len(asked) <= 2:
            raise RuntimeError("the leadership check broke")
        return False  # a standby from then on: it probes, writes nothing

    thread = threading.Thread(target=loop.run, args=(is_leader,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(asked) >= 5)
        assert thread.is_alive()
        assert loop.state.failures >= 2
        assert "leadership check broke" in loop.state.last_error
    finally:
        loop.stop.set()
        loop.wake.set()
        thread.join(10)
    assert not thread.is_alive()


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def _status(port: int) -> dict:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as answer:
            return json.loads(answer.read())
    except OSError:
        return {}


def test_a_lease_rbac_refuses_makes_the_replica_unready_and_says_why(kube, tmp_path):
    """RBAC refuses reading the Lease: the replica stands by, /readyz answers 503 and the log
    says what to grant; once RBAC allows it again, the replica becomes ready and leads."""
    if kube.emulator is None:
        pytest.skip("needs the API emulator's RBAC switch (a real API server's RBAC is not "
                    "changed by tests)")
    upstream = Upstream(tmp_path, kube)
    state = kube.emulator.state
    state.denied.add(("get", "leases"))
    port = free_port()
    proc = start_run(upstream.url, kube, tmp_path / "run-cache", f"127.0.0.1:{port}")
    try:
        wait_for(lambda: "leaseProblem" in _status(port) or proc.poll() is not None,
                 timeout=30)
        assert proc.poll() is None
        status = _status(port)
        assert status["gitReachable"] and status["apiReachable"] and not status["ready"]
        assert "403" in status["leaseProblem"]
        assert _readyz(port)[0] == 503
        state.denied.discard(("get", "leases"))
        wait_for(lambda: _readyz(port)[0] == 200 or proc.poll() is not None, timeout=30)
        assert proc.poll() is None
        wait_for(lambda: kube.cluster.get("v1", "ConfigMap", upstream.ns, "settings")
                 is not None, timeout=30)
    finally:
        terminate(proc, timeout=20)
    logs = proc.stderr.read()
    assert proc.returncode == 0, logs[-2000:]
    assert "cannot read Lease" in logs and "grant get, create and update on leases" in logs
    assert "the Lease can be used again" in logs
