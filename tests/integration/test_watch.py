"""Watching a collection as client-go's reflector does: list once (from the API server's
cache), watch from the list's resourceVersion, resume each ended watch from the last version
it sent, list again only when that version is too old. Over real HTTP to the emulator, and
held to a real API server with GITGATE_TEST_KUBECONFIG (except what only the emulator can be
made to do: forget old versions on demand)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from gitgate.apply.inventory import NAMESPACE
from gitgate.apply.ledger import read_inventories
from gitgate.apply.recordcache import RecordCache, WatchFeed
from gitgate.apply.recordformat import API_VERSION, KIND, bundle_name
from gitgate.errors import KubeError
from gitgate.passes.requests import ReconcileRequests, request_reconcile
from tests.conftest import write_files
from tests.support.hostile import gitgate


def _namespace(kube, name: str) -> str:
    ns = kube.ns(name)
    kube.cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return ns


def _cm(ns: str, name: str, value: str, run_id: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": {"watched": run_id}},
            "data": {"value": value}}


def _events(kube, ns: str, selector: str, version: str, until: Callable[[list], bool]
            ) -> list[tuple[str, str]]:
    """(type, name) of the watch's events from `version` (bookmarks left out), watched again
    from the last version until `until` holds of them (at most 60 s)."""
    seen: list[tuple[str, str]] = []
    deadline = time.monotonic() + 60
    while not until(seen) and time.monotonic() < deadline:
        for kind, obj in kube.cluster.watch("v1", "ConfigMap", ns, selector, 2,
                                            resource_version=version):
            version = str(obj["metadata"].get("resourceVersion") or version)
            if kind != "BOOKMARK":
                seen.append((kind, obj["metadata"]["name"]))
            if until(seen):
                break
    return seen


def test_a_watch_from_a_lists_version_sends_the_changes_after_it_and_nothing_before(kube):
    ns = _namespace(kube, "watch")
    selector = f"watched={kube.run_id}"
    for name in ("a", "b"):
        kube.cluster.apply(_cm(ns, name, "1", kube.run_id))
    listed, version = kube.cluster.list_metadata_cached("v1", "ConfigMap", ns, selector)
    assert sorted(item["metadata"]["name"] for item in listed) == ["a", "b"]
    assert version and all("data" not in item for item in listed)  # metadata alone

    kube.cluster.apply(_cm(ns, "a", "2", kube.run_id))
    kube.cluster.apply(_cm(ns, "c", "1", kube.run_id))
    assert kube.cluster.delete("v1", "ConfigMap", ns, "b")
    events = _events(kube, ns, selector, version, lambda seen: len(seen) >= 3)
    assert events == [("MODIFIED", "a"), ("ADDED", "c"), ("DELETED", "b")]


def test_a_watch_without_a_version_sends_every_object_first_or_is_refused(kube):
    """Why the requests watcher never opens one: at 5,000 Bundles, each new watch (one a
    minute) sent every record whole; and an API server whose etcd cannot report its progress
    (the harness's etcd 3.4) refuses it outright, so such a watch never ran there (the
    watcher listed every record from etcd every few seconds instead)."""
    ns = _namespace(kube, "watch")
    selector = f"watched={kube.run_id}"
    for name in ("a", "b"):
        kube.cluster.apply(_cm(ns, name, "1", kube.run_id))
    try:
        events = _events(kube, ns, selector, "", lambda seen: len(seen) >= 2)
    except KubeError as refused:
        assert kube.emulator is None  # the emulator answers as an API server that can
        assert "RequestWatchProgress" in refused.message
        return
    assert sorted(events) == [("ADDED", "a"), ("ADDED", "b")]


def test_a_watch_from_a_version_the_server_forgot_is_refused_with_410(kube):
    if kube.emulator is None:
        pytest.skip("etcd's compaction cannot be caused on demand on a real API server")
    ns = _namespace(kube, "watch")
    kube.cluster.apply(_cm(ns, "a", "1", kube.run_id))
    _, version = kube.cluster.list_metadata_cached("v1", "ConfigMap", ns)
    kube.emulator.state.compact()
    with pytest.raises(KubeError) as refused:
        list(kube.cluster.watch("v1", "ConfigMap", ns, "", 2, resource_version=version))
    assert refused.value.status == 410


class _Counted:
    """The real client, counting the lists and the watches the requests watcher opens."""

    def __init__(self, cluster):
        self.cluster, self.lists, self.watches = cluster, 0, 0

    def list_metadata_cached(self, *args, **kwargs):
        self.lists += 1
        return self.cluster.list_metadata_cached(*args, **kwargs)

    def watch(self, *args, **kwargs):
        self.watches += 1
        return self.cluster.watch(*args, **kwargs)


class _Noting(WatchFeed):
    """The loop's feed of the records' cache, noting the version of each event it is sent."""

    def __init__(self, cache: RecordCache) -> None:
        super().__init__(cache)
        self.versions: list[str] = []
        self.events: list[tuple[str, str]] = []  # (type, name), bookmarks left out

    def sent(self, kind: str, obj: dict) -> None:
        super().sent(kind, obj)
        self.versions.append(str(obj["metadata"].get("resourceVersion") or ""))
        if kind != "BOOKMARK":
            self.events.append((kind, str(obj["metadata"].get("name") or "")))


def _written_by_another_replica(kube, name: str, counted: _Counted, feed: _Noting) -> str:
    """A status write of the Bundle `name` by another field manager, once the watcher has
    listed (a write before its list would be in the list, not an event), and until the watch
    sent it. Returns its resourceVersion."""
    _until(lambda: counted.watches >= 1, "the watch")
    written = kube.cluster.apply({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "status": {"message": "written by another replica"}},
        manager="another-replica", subresource="status", force=True).obj
    version = str(written["metadata"]["resourceVersion"])
    _until(lambda: version in feed.versions, "the watch's event of the write")
    return version


def _until(condition: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"not in {limit} s: {what}"
        time.sleep(0.05)


def _watching(kube, counted: _Counted, on_request, feed=None, seconds: int = 1):
    requests = ReconcileRequests(kube.cluster, counted, kube.run_id, on_request, feed)
    stop = threading.Event()
    thread = threading.Thread(target=requests.watch_forever, args=(stop, seconds), daemon=True)
    thread.start()
    return requests, stop, thread


def _shop(tmp_path, kube) -> tuple[str, list[str]]:
    ns = kube.ns("shop")
    root = write_files(tmp_path / "repo", {
        "ns/bundle.yaml": f"name: {kube.run_id}-ns\nplacement: none\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "web/bundle.yaml": (f"name: {kube.run_id}-web\ndependsOn: [{kube.run_id}-ns]\n"
                            "placement: none\n"),
        "web/cm.yaml": (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web, "
                        f"namespace: {ns}}}\ndata: {{value: '1'}}\n")})
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    done = gitgate("apply", str(root), *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    return f"{kube.run_id}-web", flags


def test_the_requests_watcher_lists_once_and_resumes_each_ended_watch(tmp_path, kube):
    """Several watches end (1 s each) with one list; a `gitgate reconcile` stamp made
    between them is seen; after the server forgot the version it watched from, it lists
    again (emulator only)."""
    web, _ = _shop(tmp_path, kube)
    counted, asked = _Counted(kube.cluster), threading.Event()
    requests, stop, thread = _watching(kube, counted, asked.set)
    try:
        _until(lambda: counted.watches >= 3, "three watches")
        assert counted.lists == 1 and not asked.is_set()
        request_reconcile(kube.cluster, kube.run_id, [web], "2026-11-27T00:00:00Z")
        _until(asked.is_set, "the request seen")
        assert requests.take() == {bundle_name(web, kube.run_id): "2026-11-27T00:00:00Z"}
        assert counted.lists == 1
        if kube.emulator is not None:
            kube.emulator.state.compact()  # the version it resumes from is forgotten
            kube.cluster.apply(_cm(_namespace(kube, "watch"), "x", "1", kube.run_id))
            _until(lambda: counted.lists == 2, "a list after the 410")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


def test_another_writers_change_sent_by_the_watch_is_not_read_again(tmp_path, kube,
                                                                    monkeypatch):
    """`gitgate run` keeps each Bundle its watch sends, parsed: a record another replica
    wrote (here another field manager) is taken from there by the next pass's list of
    metadata, which names the version the watch sent; nothing is read one by one."""
    cache = RecordCache()  # as `run` keeps it
    web, _ = _shop(tmp_path, kube)
    name = bundle_name(web, kube.run_id)
    first = read_inventories(kube.cluster, kube.run_id, cache)
    feed = _Noting(cache)
    counted = _Counted(kube.cluster)
    _, stop, thread = _watching(kube, counted, lambda: None, feed, seconds=5)
    try:
        _written_by_another_replica(kube, name, counted, feed)
        cache.read_consistently()  # a list, not the watch's view (the next test)
        kube.cluster.forget()
        again = read_inventories(kube.cluster, kube.run_id, cache)
        path = f"/namespaces/{NAMESPACE}/bundles"
        assert [p for m, p, *_ in kube.cluster.sent if m == "GET"] == [
            p for m, p, *_ in kube.cluster.sent if m == "GET" and p.endswith(path)]  # the list
        assert again[web].message == "written by another replica"
        assert again[web].message != first[web].message
    finally:
        stop.set()
        thread.join(timeout=30)


def test_a_pass_takes_the_records_from_the_watch_once_it_reached_their_newest_version(
        tmp_path, kube, monkeypatch):
    """Once the watch has reached the newest record this process listed or wrote, what it
    sent is the list a pass would ask the API server's cache for: the pass sends no request
    for the records, and sees another writer's change and a deletion the watch sent. Until
    the watch reaches that version, while it does not run, and when the share moved (etcd
    first), the records are listed (held to a real API server too)."""
    cache = RecordCache()  # as `run` keeps it
    web, _ = _shop(tmp_path, kube)
    name = bundle_name(web, kube.run_id)
    gone = bundle_name(f"{kube.run_id}-ns", kube.run_id)
    path = f"/namespaces/{NAMESPACE}/bundles"

    def lists() -> list[tuple[str, str]]:
        return [(q.get("resourceVersion", ""), q.get("resourceVersionMatch", ""))
                for m, p, q, _ in kube.cluster.sent if m == "GET" and p.endswith(path)]

    def read() -> dict:
        kube.cluster.forget()
        return read_inventories(kube.cluster, kube.run_id, cache)

    first = read()
    assert lists() == [("", "")]  # the first list: etcd
    feed = _Noting(cache)
    counted = _Counted(kube.cluster)
    _, stop, thread = _watching(kube, counted, lambda: None, feed, seconds=5)
    try:
        version = _written_by_another_replica(kube, name, counted, feed)
        again = read()
        assert [(m, p) for m, p, *_ in kube.cluster.sent] == []  # no request at all
        assert again[web].message == "written by another replica" != first[web].message

        kube.cluster.delete(API_VERSION, KIND, NAMESPACE, gone)
        _until(lambda: ("DELETED", gone) in feed.events, "the watch's event of the deletion")
        assert sorted(read()) == [web] and kube.cluster.sent == []

        # a version the watch has not reached (a write of this process it has not sent yet)
        far = str(int(version) + 10_000_000)
        cache.note_version(far)
        assert sorted(read()) == [web]
        assert lists()[0] == (far, "NotOlderThan")  # listed (then etcd: the cache is behind)
        assert sorted(read()) == [web] and kube.cluster.sent == []  # the watch answers again

        cache.read_consistently()  # the share moved: etcd, whatever the watch saw
        assert sorted(read()) == [web] and lists() == [("", "")]
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    # the watch stopped: the records are listed again, from the cache
    assert sorted(read()) == [web]
    assert lists() and lists()[0][1] == "NotOlderThan"
