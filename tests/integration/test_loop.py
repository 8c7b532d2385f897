"""The reconcile loop with a local bare Git repo (file:// remote) and the API emulator."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

import gitgate
from gitgate.endpoints.routes import LoopEndpoints
from gitgate.endpoints.server import EndpointServer
from gitgate.output.statusviews import loop_document
from tests.support.looping import T0, Clock, Upstream, reconciler, start_run, wait_for
from tests.support.objects import shown

pytestmark = pytest.mark.integration


@pytest.fixture
def upstream(tmp_path, kube) -> Upstream:
    return Upstream(tmp_path, kube)


def live_value(kube, upstream) -> str | None:
    obj = kube.cluster.get("v1", "ConfigMap", upstream.ns, "settings")
    return obj["data"]["value"] if obj else None


def app_writes(kube, upstream) -> list:
    return [w for w in kube.bundle_writes() if f"/namespaces/{upstream.ns}/" in w[1]]


def test_a_new_commit_is_applied_by_the_next_tick(upstream, kube, tools, tmp_path):
    clock = Clock(T0)
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    assert loop.tick() == "revision" and live_value(kube, upstream) == "one"
    assert loop.tick() is None  # nothing new: no pass
    sha = upstream.commit({"app/cm.yaml": upstream.configmap("two")}, "two")
    clock.advance(seconds=60)
    assert loop.tick() == "revision"
    assert live_value(kube, upstream) == "two" and loop.state.revision == sha
    upstream.work.git.reset("--hard", "HEAD~1")  # a force-pushed branch is followed
    upstream.work.git.push("origin", "main", "--force")
    clock.advance(seconds=60)
    assert loop.tick() == "revision" and live_value(kube, upstream) == "one"


def test_a_committed_gate_holds_the_bundle_on_the_next_pass(upstream, kube, tools, tmp_path):
    clock = Clock(T0)
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    loop.tick()
    upstream.commit({**upstream.gate("freeze", f'{{bundles: ["{upstream.run}-app"], '
                                               'reason: INC-1}'),
                     "app/cm.yaml": upstream.configmap("frozen")}, "freeze and change")
    kube.cluster.forget()
    clock.advance(seconds=60)
    assert loop.tick() == "revision"
    assert app_writes(kube, upstream) == [] and live_value(kube, upstream) == "one"
    verdicts = {b.bundle: b.verdict for b in loop.state.last_result.bundles}
    assert verdicts[f"{upstream.run}-app"] == "held"


def test_an_until_that_passes_applies_without_a_new_commit(upstream, kube, tools, tmp_path):
    until = (T0 + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    upstream.commit({**upstream.gate("inc", f'{{bundles: ["{upstream.run}-app"], '
                                            f'reason: INC-2, until: "{until}"}}'),
                     "app/cm.yaml": upstream.configmap("after-incident")}, "gate")
    clock = Clock(T0)
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    loop.tick()
    assert live_value(kube, upstream) is None  # held from the start: never created
    assert loop.state.next_transition == T0 + timedelta(hours=1)
    clock.advance(minutes=30)
    assert loop.tick() is None
    clock.advance(minutes=30)
    assert loop.tick() == "gate-transition"
    assert live_value(kube, upstream) == "after-incident"


def test_a_window_opening_holds_without_a_commit(upstream, kube, tools, tmp_path):
    upstream.commit(upstream.gate("window", f'{{bundles: ["{upstream.run}-app"], reason: freeze,'
                                            ' windows: [{cron: "30 12 * * *", duration: 1h, '
                                            'timeZone: UTC}]}'), "window gate")
    clock = Clock(T0)
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    loop.tick()
    assert live_value(kube, upstream) == "one"
    assert loop.state.next_transition == T0 + timedelta(minutes=30)
    clock.advance(minutes=31)
    kube.cluster.forget()
    assert loop.tick() == "gate-transition"
    verdicts = {b.bundle: b.verdict for b in loop.state.last_result.bundles}
    assert verdicts[f"{upstream.run}-app"] == "held"
    assert app_writes(kube, upstream) == []
    assert loop.state.next_transition == T0 + timedelta(minutes=90)


def test_webhook_signature_and_metrics(upstream, kube, tools, tmp_path):
    loop = reconciler(upstream, kube, tools, tmp_path, interval=600)
    secret = b"webhook-secret"
    server = EndpointServer(("127.0.0.1", 0), LoopEndpoints(
        ready=lambda: loop.state.ready, status=lambda: loop_document(loop.published),
        metrics=loop.metrics.exposition,
        trigger=loop.trigger, webhook_secret=secret)).start()
    base = f"http://127.0.0.1:{server.port}"
    thread = threading.Thread(target=loop.run, daemon=True)
    try:
        thread.start()
        wait_for(lambda: loop.state.ready)
        assert urllib.request.urlopen(base + "/readyz").status == 200
        sha = upstream.commit({"app/cm.yaml": upstream.configmap("hooked")}, "hooked")
        body = b'{"ref": "refs/heads/main"}'
        assert post(base + "/hooks/git", body, "sha256=" + "0" * 64) == 401
        assert post(base + "/hooks/git", body, None) == 401
        time.sleep(0.3)
        assert live_value(kube, upstream) == "one"  # a bad signature triggers nothing
        good = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        assert post(base + "/hooks/git", body, good) == 202
        wait_for(lambda: loop.state.revision == sha)  # the interval is 10 minutes
        assert live_value(kube, upstream) == "hooked"
        text = urllib.request.urlopen(base + "/metrics").read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        verdicts = {(s.labels["bundle"], s.labels["verdict"]): s.value
                    for s in families["gitgate_bundle_verdict"].samples}
        assert verdicts[(f"{upstream.run}-app", "apply")] == 1
        assert verdicts[(f"{upstream.run}-app", "held")] == 0
        assert "gitgate_pass_duration_seconds" in families
        assert families["gitgate_last_success_timestamp_seconds"].samples[0].value > 0
        build = families["gitgate_build_info"].samples[0]
        assert build.value == 1 and build.labels["version"] == gitgate.__version__
        assert build.labels["helm"] == tools.helm_version
        applied_at = {s.labels["bundle"]: s.value
                      for s in families["gitgate_bundle_last_applied_timestamp_seconds"].samples}
        assert applied_at[f"{upstream.run}-app"] > 0
        fetches = {s.labels["result"]: s.value for s in families["gitgate_git_fetch"].samples
                   if s.name == "gitgate_git_fetch_total"}
        assert fetches["success"] >= 2 and "failure" not in fetches
        assert families["gitgate_git_last_fetch_success"].samples[0].value == 1
        assert "process_resident_memory_bytes" in text and "python_info" in text
        assert "_created" not in text
        status = urllib.request.urlopen(base + "/status").read().decode()
        assert sha in status
    finally:
        loop.stop.set()
        loop.wake.set()
        thread.join(10)
        server.stop()


def post(url: str, body: bytes, signature: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if signature:
        headers["X-Hub-Signature-256"] = signature
    try:
        return urllib.request.urlopen(urllib.request.Request(
            url, data=body, headers=headers, method="POST")).status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_becoming_leader_wakes_the_loop_at_once(kube):
    """The Lease's holder calls `on_leading` as it starts leading: `gitgate run` wires it to
    the loop's wake-up, so a fresh replica's first pass does not wait for its next poll."""
    from gitgate.apiserver.lease import LeaseElector
    from gitgate.apiserver.transport import load_client
    from gitgate.apply.inventory import NAMESPACE, system_namespace
    from tests.support.kubetarget import RecordingKube

    api = load_client(kube.kubeconfig)
    if RecordingKube(api).get("v1", "Namespace", "", NAMESPACE) is None:
        RecordingKube(api).apply(system_namespace())
    woken = threading.Event()
    elector = LeaseElector(api, NAMESPACE, f"gitgate-wake-{kube.run_id}", "replica-w",
                           lease_duration=3, renew_deadline=2, retry_period=1,
                           on_leading=woken.set).start()
    try:
        assert woken.wait(20) and elector.is_leader()
    finally:
        elector.stop()


def test_only_the_leader_writes_and_a_standby_takes_over(upstream, kube, tools, tmp_path):
    from gitgate.apiserver.lease import LeaseElector
    from gitgate.apiserver.transport import load_client
    from gitgate.apply.inventory import NAMESPACE, system_namespace
    from tests.support.kubetarget import RecordingKube

    apis = [load_client(kube.kubeconfig), load_client(kube.kubeconfig)]
    clusters = [RecordingKube(api) for api in apis]
    if clusters[0].get("v1", "Namespace", "", NAMESPACE) is None:
        clusters[0].apply(system_namespace())
    loops = [reconciler(upstream, kube, tools, tmp_path, cluster=c, interval=0.3)
             for c in clusters]
    electors = [LeaseElector(api, NAMESPACE, f"gitgate-{kube.run_id}", name, lease_duration=3,
                             renew_deadline=2, retry_period=1) for api, name in zip(
                                 apis, ("replica-a", "replica-b"), strict=True)]
    threads = []
    try:
        electors[0].start()
        wait_for(electors[0].is_leader)
        electors[1].start()
        for loop, elector in zip(loops, electors, strict=True):
            thread = threading.Thread(target=loop.run, args=(elector.is_leader,), daemon=True)
            thread.start()
            threads.append(thread)
        wait_for(lambda: live_value(kube, upstream) == "one")
        time.sleep(1.5)  # several ticks of both loops
        assert clusters[0].writes() and clusters[1].writes() == []
        assert not electors[1].is_leader()

        electors[0].stop(release=False)  # the leader dies: no renewal, no write, no release
        loops[0].stop.set()
        loops[0].wake.set()
        threads[0].join(10)
        sha = upstream.commit({"app/cm.yaml": upstream.configmap("two")}, "after failover")
        wait_for(electors[1].is_leader, timeout=20)
        wait_for(lambda: loops[1].state.revision == sha, timeout=20)
        assert live_value(kube, upstream) == "two"
        assert clusters[1].writes()
        if kube.emulator is not None:
            lease = kube.emulator.state.object("coordination.k8s.io", "leases", NAMESPACE,
                                               f"gitgate-{kube.run_id}")
            assert lease["spec"]["holderIdentity"] == "replica-b"
    finally:
        for elector in electors:
            elector.stop()
        for loop in loops:
            loop.stop.set()
            loop.wake.set()
        for thread in threads:
            thread.join(10)


def test_gitgate_run_applies_serves_and_exits_0_on_sigterm(upstream, kube, tools, tmp_path):
    import signal

    secret = tmp_path / "webhook-secret"
    secret.write_text("s3cret\n")
    proc = start_run(upstream.url, kube, tmp_path / "cache", "127.0.0.1:0",
                     "--webhook-secret-file", str(secret))
    try:
        wait_for(lambda: live_value(kube, upstream) == "one" or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read()
        upstream.commit({"app/cm.yaml": upstream.configmap("two")}, "two")
        wait_for(lambda: live_value(kube, upstream) == "two")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    logs = proc.stderr.read()
    assert '"event": "pass"' in logs and "s3cret" not in logs
    assert "test-token-not-secret" not in logs


def test_the_running_loop_picks_up_a_commit_by_polling(upstream, kube, tools, tmp_path):
    loop = reconciler(upstream, kube, tools, tmp_path, interval=0.5)
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: loop.state.ready)
        sha = upstream.commit({"app/cm.yaml": upstream.configmap("polled")}, "polled")
        wait_for(lambda: loop.state.revision == sha)
        assert live_value(kube, upstream) == "polled"
        assert loop.state.last_reason == "revision"
    finally:
        loop.stop.set()
        loop.wake.set()
        thread.join(10)


def test_the_loop_and_apply_make_the_same_pass(upstream, kube, tools, tmp_path, capsys):
    """Both come through gitgate.passes: same repo, equal servers, same result."""
    import json

    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    from gitgate.cli import main
    from tests.kubeapi.server import KubeApiEmulator

    upstream.commit(upstream.gate("db", f'{{bundles: ["{upstream.run}-app"], action: suspend, '
                                        'clusters: [member2], reason: move}'), "suspend app")
    loop = reconciler(upstream, kube, tools, tmp_path, clock=Clock(T0))
    assert loop.tick() == "revision"
    looped = {b.bundle: (b.verdict, b.reason, sorted(map(str, b.applied)))
              for b in loop.state.last_result.bundles}
    with KubeApiEmulator() as other:
        kubeconfig = other.write_kubeconfig(tmp_path / "other-kubeconfig")
        assert main(["apply", str(upstream.root), "--kubeconfig", str(kubeconfig),
                     "--instance", kube.run_id, "-o", "json"]) == 0
        applied = {b["name"]: (b["verdict"], b["reason"], sorted(map(shown, b["applied"])))
                   for b in json.loads(capsys.readouterr().out)["bundles"]}
        assert KubeCluster(load_client(str(kubeconfig))).get(
            "v1", "ConfigMap", upstream.ns, "settings") is not None
    assert applied == looped
    assert looped[f"{upstream.run}-app"][0] == "suspended"


def test_the_loop_gives_freed_memory_back_after_a_pass_and_after_its_read_of_karmada(
        tmp_path, kube, tools, monkeypatch):
    """`heap.give_back` (glibc's malloc_trim) runs once a pass is done, before the read of
    Karmada that follows it, and again after that read: the peaks of the two do not add."""
    from gitgate.loop import observer
    from gitgate.loop import reconciler as reconciler_module

    steps: list[str] = []
    for module in (observer, reconciler_module):
        monkeypatch.setattr(module, "give_back", lambda: steps.append("give back") or True)
    upstream = Upstream(tmp_path, kube)
    loop = reconciler(upstream, kube, tools, tmp_path)
    read = loop.observer.refresh_status
    passed = loop._pass

    def pass_(*args, **kwargs):
        steps.append("pass")
        return passed(*args, **kwargs)

    def refresh(*args, **kwargs):
        steps.append("read")
        return read(*args, **kwargs)

    monkeypatch.setattr(loop, "_pass", pass_)
    monkeypatch.setattr(loop.observer, "refresh_status", refresh)
    loop.run(until=lambda: "read" in steps)
    assert steps == ["pass", "give back", "read", "give back"]


def test_the_read_of_karmada_is_timed_and_said_while_it_runs(upstream, kube, tools, tmp_path):
    """`gitgate_karmada_reading` is 1 during the read of Karmada that follows a pass (each of
    its lists sees it so) and 0 after; `gitgate_karmada_read_duration_seconds` counts each
    read."""
    loop = reconciler(upstream, kube, tools, tmp_path)
    sample = loop.metrics.registry.get_sample_value
    assert loop.tick() == "revision"
    during: list[float | None] = []
    loop.observer.refresh_status(
        stop=lambda: during.append(sample("gitgate_karmada_reading")) or False)
    assert during and set(during) == {1.0}  # asked before each of the read's lists
    assert sample("gitgate_karmada_reading") == 0
    assert sample("gitgate_karmada_read_duration_seconds_count") == 1
    loop.observer.refresh_status()
    assert sample("gitgate_karmada_read_duration_seconds_count") == 2
