"""Sharding on a real Karmada (issue 31): two `gitgate run --shard` replicas share six
bundles, both take part, and when one is killed (SIGKILL: no Lease handed back) the other
takes its bundles over once its Lease runs out, and both member clusters get the next
change of every bundle."""

from __future__ import annotations

import signal
import time

import pytest

from tests.e2e.karmada import Run, wait_for
from tests.support.karmadarun import app_files, with_namespaces
from tests.support.shards import sharing_identities

pytestmark = pytest.mark.e2e
APPS = ["a", "b", "c", "d", "e", "f"]
LEASE = 6  # seconds


def value_on(run: Run, member: str, app: str) -> str | None:
    return (run.karmada.configmap(member, run.ns(app), f"{app}-config") or {}).get("value")


def everywhere(run: Run, value: str, timeout: float) -> None:
    for app in APPS:
        for member in ("member1", "member2"):
            wait_for(lambda m=member, a=app: value_on(run, m, a) == value, timeout=timeout,
                     message=f"{member} gets {app} at {value}")


def shards_of(run: Run) -> dict[str, str | None]:
    return {app: run.result(run.status(), app).get("shard") for app in APPS}


def test_two_replicas_share_the_bundles_and_one_killed_is_taken_over(run, karmada,
                                                                      tmp_path):
    files = dict(with_namespaces(run, *APPS))
    for app in APPS:
        files.update(app_files(run, app, "nginx:1.0", "v1"))
    run.repo.commit(files, "six apps")
    replicas = [run.start_loop(tmp_path / f"cache-{index}", "--shard", "--expect-replicas", "2",
                               "--lease-duration", str(LEASE), "--status-interval", "2s",
                               "--identity", identity)
                for index, identity in enumerate(sharing_identities(APPS))]
    try:
        everywhere(run, "v1", timeout=120)
        wait_for(lambda: len(set(shards_of(run).values())) == 2, timeout=60,
                 message="both replicas hold a share")
        before = shards_of(run)

        replicas[0].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        run.repo.commit({f"{app}/app.yaml": app_files(run, app, "nginx:1.0", "v2")
                         [f"{app}/app.yaml"] for app in APPS}, "v2 everywhere")
        everywhere(run, "v2", timeout=120)
        took = time.monotonic() - killed
        print(f"every bundle at v2 on both members {took:.1f}s after the kill "
              f"(Lease {LEASE}s); shares before: {sorted(set(before.values()))}")
        after = shards_of(run)
        assert len(set(after.values())) == 1  # the survivor holds every bundle now
        assert set(after.values()) < set(before.values())
    finally:
        for index, process in enumerate(replicas):
            said = run.stop_loop(process)
            print(f"--- replica {index}:\n" + "\n".join(said.splitlines()[-15:]))
