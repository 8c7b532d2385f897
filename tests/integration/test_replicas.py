"""Two `gitgate run` processes against one API server, as `replicas: 2` runs them: both are
ready (readiness means "can serve", not "leads"), only one leads, and when the leader gets
SIGTERM it clears the Lease's holder and the standby leads one lease duration later (nothing
in a Lease can prove its holder stopped writing); a Lease written or deleted by anyone else
never makes two leaders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
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
             "--listen", f"127.0.0.1:{port}", "--interval", "1s", "--lease-duration", "4",
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
        took = until(lambda: leading(ports[standby]), 15,
                     "the standby leads after the leader's SIGTERM (the Lease lasts 4 s)")
        assert replicas[leader].wait(10) == 0
        assert list(scratch[leader].iterdir()) == []  # its scratch folders went with it
        assert any(scratch[standby].iterdir())  # (the one still running has them)
        assert took < 10  # one lease duration from the cleared holder, and a retry or two
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



def test_a_deleted_leader_lease_makes_no_second_leader(kube):
    """Someone deletes the leader's Lease. The standby does not take it at once (the holder
    may be writing): it waits out one lease duration from the holder's last renewal it saw,
    while the holder's next renewal makes the Lease anew. Each replica's election step is run
    by hand, with the standby's clock injected."""
    from kubernetes.leaderelection import electionconfig, leaderelection

    from gitgate.apiserver.lease import _StoppableLeaseLock
    from gitgate.apiserver.transport import load_client
    from gitgate.apply.inventory import NAMESPACE, system_namespace
    from tests.support.kubetarget import RecordingKube

    api = load_client(kube.kubeconfig)
    cluster = RecordingKube(api)
    if cluster.get("v1", "Namespace", "", NAMESPACE) is None:
        cluster.apply(system_namespace())
    name = f"gitgate-deleted-{kube.run_id}"
    clock = [1000.0]
    stopped = threading.Event()

    def election(identity: str) -> leaderelection.LeaderElection:
        lock = _StoppableLeaseLock(name, NAMESPACE, identity, load_client(kube.kubeconfig),
                                   stopped, lambda _: None, 6, lambda: clock[0])
        return leaderelection.LeaderElection(electionconfig.Config(
            lock, 6, 4, 1, lambda: None, lambda: None))

    a, b = election("replica-a"), election("replica-b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # held by a

    cluster.delete("coordination.k8s.io/v1", "Lease", NAMESPACE, name)
    assert not b.try_acquire_or_renew()  # vanished under a live holder: not taken
    assert cluster.get("coordination.k8s.io/v1", "Lease", NAMESPACE, name) is None
    assert a.try_acquire_or_renew()  # the holder's renewal makes it anew
    lease = cluster.get("coordination.k8s.io/v1", "Lease", NAMESPACE, name)
    assert lease["spec"]["holderIdentity"] == "replica-a"

    assert not b.try_acquire_or_renew()  # b sees a's new Lease
    cluster.delete("coordination.k8s.io/v1", "Lease", NAMESPACE, name)
    clock[0] += 7  # a renews no more (it died): after a lease duration b may take it
    assert b.try_acquire_or_renew()
    lease = cluster.get("coordination.k8s.io/v1", "Lease", NAMESPACE, name)
    assert lease["spec"]["holderIdentity"] == "replica-b"


@pytest.mark.parametrize("tampered", [
    {"holderIdentity": "replica-b"}, {"holderIdentity": None},
    {"leaseDurationSeconds": 1}, {"renewTime": "2000-01-01T00:00:00.000000Z"},
], ids=["holder-the-standby", "holder-cleared", "short-duration", "backdated"])
def test_nothing_written_into_the_leader_lease_makes_a_second_leader(kube, tampered):
    """Someone writes into the leader's Lease: names the standby, clears the holder, shortens
    the duration, backdates the renewal. The standby does not lead until one lease duration
    after that change; the leader renews nothing over a write it did not make (and a
    conflicting renewal ends its term at once), so no two replicas lead at once."""
    from kubernetes.leaderelection import electionconfig, leaderelection

    from gitgate.apiserver.lease import _StoppableLeaseLock
    from gitgate.apiserver.transport import load_client
    from gitgate.apply.inventory import NAMESPACE, system_namespace
    from tests.support.kubetarget import RecordingKube

    api = load_client(kube.kubeconfig)
    cluster = RecordingKube(api)
    if cluster.get("v1", "Namespace", "", NAMESPACE) is None:
        cluster.apply(system_namespace())
    name = f"gitgate-tampered-{kube.run_id}"
    lost: list[str] = []

    def election(identity: str) -> leaderelection.LeaderElection:
        lock = _StoppableLeaseLock(name, NAMESPACE, identity, load_client(kube.kubeconfig),
                                   threading.Event(), lambda _: None, 3,
                                   on_lost=lambda: lost.append(identity))
        return leaderelection.LeaderElection(electionconfig.Config(
            lock, 3, 2, 1, lambda: None, lambda: None))

    a, b = election("replica-a"), election("replica-b")
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    cluster.apply({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": name, "namespace": NAMESPACE},
                   "spec": tampered}, manager="kubectl", force=True)
    assert not b.try_acquire_or_renew()  # not at once, whatever the Lease says
    assert not a.try_acquire_or_renew()  # nor does a renew over someone else's write
    assert not b.try_acquire_or_renew()
    time.sleep(3.2)  # one lease duration (3 s) with no change: the Lease may be taken
    winner = "replica-a" if a.try_acquire_or_renew() else (
        "replica-b" if b.try_acquire_or_renew() else None)
    assert winner is not None
    lease = cluster.get("coordination.k8s.io/v1", "Lease", NAMESPACE, name)
    assert lease["spec"]["holderIdentity"] == winner
