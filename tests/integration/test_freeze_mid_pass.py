"""A freeze pushed while a pass is writing stops that pass's writes of what it covers: the
loop looks at the remote's head between writes (at once on a webhook) and the pass checks
the newer commit's freeze files before each write. Deterministic: the push happens inside a
write, and that write waits until the loop has read the newer head."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitgate.errors import Reason
from tests.support.looping import Upstream, reconciler, wait_for

pytestmark = pytest.mark.integration

BUNDLES = 12


class PushingMidPass:
    """The test cluster, with a hook run before the n-th ConfigMap write of a pass."""

    def __init__(self, cluster, at: int, hook):
        self._cluster, self.at, self.hook = cluster, at, hook
        self.written: list[str] = []  # the ConfigMaps written, in order
        # how many were written when the hook ran: the write that ran it was past the
        # pass's check already (in flight), the next ones are not
        self.pushed_at: int | None = None

    def __getattr__(self, name):
        return getattr(self._cluster, name)

    def apply(self, obj, *args, **kwargs):
        if obj.get("kind") == "ConfigMap" and not kwargs.get("dry_run") and \
                obj["metadata"]["name"].startswith("b"):
            if len(self.written) == self.at and self.pushed_at is None:
                self.pushed_at = len(self.written) + 1
                self.hook()
            self.written.append(obj["metadata"]["name"])
        return self._cluster.apply(obj, *args, **kwargs)


@pytest.fixture
def upstream(tmp_path, kube):
    up = Upstream(tmp_path, kube)
    files = {"gitgate.yaml": "defaults: {placement: {clusterAffinity: "
                             "{clusterNames: [member1]}}}\n"}
    for i in range(BUNDLES):
        files[f"apps/b{i:02d}/bundle.yaml"] = f"name: b{i:02d}\n"
        files[f"apps/b{i:02d}/cms.yaml"] = "".join(
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b{i:02d}-{k}, "
            f"namespace: {up.ns}}}\ndata: {{v: one}}\n" for k in range(3))
    up.commit(files, "twelve bundles")
    return up


def loop_over(upstream, kube, tools, tmp_path, cluster):
    rec = reconciler(upstream, kube, tools, tmp_path, cluster=cluster)
    rec.settings = replace(rec.settings, apply=replace(rec.settings.apply, concurrency=1))
    return rec


def covered_after_push(cluster, prefix: str) -> list[str]:
    assert cluster.pushed_at is not None, "the pass never reached the push"
    return [n for n in cluster.written[cluster.pushed_at:] if n.startswith(prefix)]


@pytest.mark.parametrize("action", ["hold", "suspend"])
def test_a_gate_pushed_mid_pass_stops_the_writes_it_covers_and_only_those(
        upstream, kube, tools, tmp_path, action):
    rec = None

    def push():
        upstream.commit(upstream.gate("freeze", f"{{bundles: ['b1*'], action: {action}, "
                                                "reason: on-call freeze}"), "freeze b1*")
        assert rec is not None and rec.freezes.peek_newer()

    cluster = PushingMidPass(kube.cluster, at=4, hook=push)
    rec = loop_over(upstream, kube, tools, tmp_path, cluster)
    assert rec.tick() is not None
    assert covered_after_push(cluster, "b1") == []
    # the bundles it does not cover still went out whole
    written = set(cluster.written)
    assert {f"b0{i}-{k}" for i in range(10) for k in range(3)} <= written
    results = {b.bundle: b for b in rec.state.last_result.bundles}
    stopped = [name for name, b in results.items() if b.reason == Reason.FROZEN]
    assert stopped and all(name.startswith("b1") for name in stopped)
    assert "gates/freeze.yaml" in results[stopped[0]].message
    # the next pass judges the new commit: the covered bundles are held or suspended
    rec.state.requested = True
    assert rec.tick() is not None
    verdicts = {b.bundle: b.verdict for b in rec.state.last_result.bundles}
    assert verdicts["b10"] == ("held" if action == "hold" else "suspended")


def test_a_webhook_mid_pass_makes_the_watcher_read_the_new_head(upstream, kube, tools,
                                                                 tmp_path):
    rec = None

    def push():
        upstream.commit(upstream.gate("all", "{bundles: ['*'], reason: stop everything}"),
                        "freeze everything")
        assert rec is not None
        rec.trigger()  # the webhook's handler
        wait_for(lambda: rec.freezes.newer is not None, timeout=20)

    cluster = PushingMidPass(kube.cluster, at=7, hook=push)
    rec = loop_over(upstream, kube, tools, tmp_path, cluster)
    rec.settings = replace(rec.settings, freeze_check=replace(rec.settings).freeze_check * 0)
    watcher = rec.watch_newer()
    try:
        rec.tick()
    finally:
        rec.stop.set()
        rec.freezes.peek_wake.set()
        watcher.join(timeout=10)
    assert not watcher.is_alive()
    assert cluster.written[cluster.pushed_at:] == []


def test_a_paused_folder_pushed_mid_pass_stops_its_bundle(upstream, kube, tools, tmp_path):
    rec = None

    def push():
        upstream.commit({"apps/b11/PAUSE": "incident\n"}, "pause b11")
        assert rec is not None and rec.freezes.peek_newer()

    cluster = PushingMidPass(kube.cluster, at=2, hook=push)
    rec = loop_over(upstream, kube, tools, tmp_path, cluster)
    rec.tick()
    assert covered_after_push(cluster, "b11") == []
    assert {f"b10-{k}" for k in range(3)} <= set(cluster.written)


def test_a_commit_that_only_lifts_or_repeats_freezes_stops_nothing(upstream, kube, tools,
                                                                  tmp_path):
    rec = None

    def push():
        upstream.commit({"apps/b00/note.txt": "unrelated\n"}, "a note")
        assert rec is not None and rec.freezes.peek_newer()
        assert rec.freezes.newer is not None

    cluster = PushingMidPass(kube.cluster, at=3, hook=push)
    rec = loop_over(upstream, kube, tools, tmp_path, cluster)
    rec.tick()
    assert len(cluster.written) == BUNDLES * 3
    assert not any(b.failed for b in rec.state.last_result.bundles)
