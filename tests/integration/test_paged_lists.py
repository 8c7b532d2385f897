"""Lists come in pages (`limit` and `continue`, as client-go's pager and kubectl ask): a list
of 5,000 records is never one answer, so a replica never holds its bytes and the decoder's
working memory for them at once. Held to a real API server too; what etcd's compaction does to
a paged list (410 Expired) is made to happen on the emulator alone."""

from __future__ import annotations

import pytest

from gitgate.apiserver import verbs
from gitgate.apply import ledger, recordcache
from gitgate.apply.inventory import NAMESPACE
from gitgate.apply.ledger import read_inventories
from gitgate.apply.recordcache import RecordCache
from gitgate.errors import ContinueExpired
from tests.conftest import write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration

PAGE = 3


def configmaps(kube, count: int) -> tuple[str, str]:
    ns = kube.ns("paged")
    kube.cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    label = f"paged={kube.run_id}"
    for index in range(count):
        kube.cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"cm-{index:02d}", "namespace": ns, "labels": {"paged": kube.run_id}},
            "data": {"index": str(index)}})
    return ns, label


def list_queries(kube, ns: str) -> list[dict]:
    return [query for method, path, query, _ in kube.cluster.sent
            if method == "GET" and path.endswith(f"/namespaces/{ns}/configmaps")]


def compact_after_first_page(kube, monkeypatch, objects_only: bool = False) -> None:
    """etcd compacts while the pages are read: the token of the first page expires (with
    `objects_only`, the first page of whole objects, not of metadata)."""
    sent = kube.cluster.request
    done = []

    def request(method, path, **kwargs):
        answer = sent(method, path, **kwargs)
        whole = kwargs.get("accept", "application/json") == "application/json"
        if (kwargs.get("query") or {}).get("limit") and not done and (whole or
                                                                      not objects_only):
            done.append(path)
            kube.emulator.state.compact()
        return answer

    monkeypatch.setattr(kube.cluster, "request", request)


@pytest.mark.parametrize("read", ["list_objects", "list_metadata"])
def test_a_list_longer_than_a_page_is_read_in_pages_and_returned_whole(kube, monkeypatch,
                                                                        read):
    monkeypatch.setattr(verbs, "PAGE" if read == "list_objects" else "METADATA_PAGE", PAGE)
    ns, label = configmaps(kube, 8)
    kube.cluster.forget()
    found = getattr(kube.cluster, read)("v1", "ConfigMap", ns, label)
    assert [o["metadata"]["name"] for o in found] == [f"cm-{i:02d}" for i in range(8)]
    assert all(o["kind"] == "ConfigMap" for o in found)
    queries = list_queries(kube, ns)
    assert [q["limit"] for q in queries] == ["3", "3", "3"]
    assert "continue" not in queries[0] and all(q.get("continue") for q in queries[1:])
    assert all(q["labelSelector"] == label for q in queries)


def test_pages_are_read_one_at_a_time_as_they_are_used(kube, monkeypatch):
    monkeypatch.setattr(verbs, "PAGE", PAGE)
    ns, label = configmaps(kube, 7)
    kube.cluster.forget()
    pages = kube.cluster.list_pages("v1", "ConfigMap", ns, label)
    first = next(pages)
    assert len(first) == 3 and len(list_queries(kube, ns)) == 1  # the next not asked yet
    assert [len(first)] + [len(page) for page in pages] == [3, 3, 1]
    kube.cluster.forget()
    exact = kube.cluster.list_objects("v1", "ConfigMap", ns, "paged=nobody")
    assert exact == [] and len(list_queries(kube, ns)) == 1


def test_an_expired_list_is_read_again_whole(kube, monkeypatch):
    if kube.emulator is None:
        pytest.skip("etcd's compaction cannot be caused on demand on a real API server")
    monkeypatch.setattr(verbs, "PAGE", PAGE)
    ns, label = configmaps(kube, 8)
    compact_after_first_page(kube, monkeypatch)
    with pytest.raises(ContinueExpired):
        list(kube.cluster.list_pages("v1", "ConfigMap", ns, label))

    monkeypatch.setattr(kube.emulator.state, "compacted", 0)
    compact_after_first_page(kube, monkeypatch)
    kube.cluster.forget()
    found = kube.cluster.list_objects("v1", "ConfigMap", ns, label)
    assert [o["metadata"]["name"] for o in found] == [f"cm-{i:02d}" for i in range(8)]
    queries = list_queries(kube, ns)
    assert [q.get("limit") for q in queries] == ["3", "3", None]  # then the whole list


def _bundles_repo(tmp_path, kube, count: int):
    ns = kube.ns("records")
    files = {"ns/bundle.yaml": f"name: {kube.run_id}-ns\nplacement: none\n",
             "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"}
    for index in range(count):
        files[f"b{index}/bundle.yaml"] = (f"name: {kube.run_id}-b{index}\n"
                                          f"dependsOn: [{kube.run_id}-ns]\nplacement: none\n")
        files[f"b{index}/cm.yaml"] = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: "
                                      f"{{name: cm{index}, namespace: {ns}}}\n")
    root = write_files(tmp_path / "repo", files)
    done = gitgate("apply", str(root), "--kubeconfig", kube.kubeconfig,
                   "--instance", kube.run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    return {f"{kube.run_id}-ns"} | {f"{kube.run_id}-b{i}" for i in range(count)}


@pytest.mark.parametrize("kept", [False, True], ids=["read-once", "kept-parsed"])
@pytest.mark.parametrize("expires", [False, True], ids=["pages", "pages-expire"])
def test_records_are_read_in_pages_and_again_whole_when_the_pages_expire(
        tmp_path, kube, monkeypatch, kept, expires):
    """`gitgate run` keeps the records parsed (and lists them whole when many changed); a
    one-shot command reads them once. Either way a page is parsed before the next is read."""
    if expires and kube.emulator is None:
        pytest.skip("etcd's compaction cannot be caused on demand on a real API server")
    bundles = _bundles_repo(tmp_path, kube, 6)
    monkeypatch.setattr(verbs, "PAGE", PAGE)
    cache = RecordCache() if kept else None  # as `run` keeps it
    monkeypatch.setattr(recordcache, "ONE_BY_ONE", 0)  # every record unknown: read in full
    if expires:
        compact_after_first_page(kube, monkeypatch, objects_only=True)
    path = f"/namespaces/{NAMESPACE}/bundles"
    seen: list[str] = []  # the order of record pages asked for and records parsed
    sent, parse = kube.cluster.request, ledger.from_bundle

    def request(method, asked, **kwargs):
        whole = kwargs.get("accept", "application/json") == "application/json"
        if method == "GET" and asked.endswith(path) and whole:
            seen.append("page" if (kwargs.get("query") or {}).get("limit") else "whole")
        return sent(method, asked, **kwargs)

    def parsed(record):
        seen.append("parsed")
        return parse(record)

    monkeypatch.setattr(kube.cluster, "request", request)
    monkeypatch.setattr(ledger, "from_bundle", parsed)
    monkeypatch.setattr(recordcache, "from_bundle", parsed)
    found = read_inventories(kube.cluster, kube.run_id, cache)
    assert set(found) == bundles and all(inv.entries for inv in found.values())
    asked = [step for step in seen if step != "parsed"]
    if expires:  # the first page, the second answered 410, then a list from the start
        assert asked == ["page"] * 5
        assert seen[-len(bundles):] == ["parsed"] * len(bundles)
    else:  # 7 records, 3 a page: each page parsed before the next is asked for
        assert seen == ["page"] + ["parsed"] * 3 + ["page"] + ["parsed"] * 3 + ["page",
                                                                                "parsed"]


def test_a_request_stamped_before_the_watch_is_found_by_a_list_of_metadata(tmp_path, kube):
    """A running loop's requests watcher lists what was asked while no watch ran: the
    Bundles' metadata, and the one stamped read whole (was it handled?), not every record."""
    import threading

    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    from gitgate.passes.requests import ReconcileRequests, request_reconcile

    bundles = _bundles_repo(tmp_path, kube, 3)
    asked = f"{kube.run_id}-b1"
    request_reconcile(KubeCluster(load_client(kube.kubeconfig)), kube.run_id, [asked], "t1")
    heard, stop = threading.Event(), threading.Event()
    requests = ReconcileRequests(kube.cluster, kube.cluster, kube.run_id, heard.set)
    kube.cluster.forget()
    watching = threading.Thread(target=requests.watch_forever, args=(stop, 2), daemon=True)
    watching.start()
    try:
        assert heard.wait(30)
        assert requests.take() == {f"{kube.run_id}.{asked}": "t1"}
    finally:
        stop.set()
        watching.join(10)
    path = f"/namespaces/{NAMESPACE}/bundles"
    reads = [p.rpartition("/")[2] for m, p, q, _ in kube.cluster.sent
             if m == "GET" and path + "/" in p]
    assert reads == [f"{kube.run_id}.{asked}"] and len(bundles) == 4


def test_karmada_is_read_with_the_templates_metadata_alone(tmp_path, kube):
    """What is kept of a template after a pass is its identity, labels, generation and
    resourceVersion: all metadata, so the lists of templates ask for nothing more (a
    ConfigMap's data never crosses the wire to be dropped)."""
    from gitgate.model import ObjectRef
    from gitgate.passes.karmadareads import read_karmada

    _bundles_repo(tmp_path, kube, 2)
    ns = kube.ns("records")
    refs = {ObjectRef("", "ConfigMap", ns, f"cm{i}"): "v1" for i in range(2)}
    kube.cluster.forget()
    read = read_karmada(kube.cluster, refs)
    assert set(read.templates) == set(refs)
    for ref, template in read.templates.items():
        live = kube.cluster.get("v1", "ConfigMap", ns, ref.name)
        assert template["apiVersion"] == "v1" and template["kind"] == "ConfigMap"
        assert template["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
        assert template["metadata"]["labels"] == live["metadata"]["labels"]
    asked = [accept for path, accept in kube.cluster.accepts
             if path.endswith(f"/namespaces/{ns}/configmaps")]
    assert asked and all("as=PartialObjectMetadataList" in a for a in asked)


def test_a_list_that_fills_its_last_page_comes_back_whole(kube, monkeypatch):
    """A real server may answer a last page of nothing (more keys in etcd, none matching):
    the list is still whole, and no page is larger than asked."""
    monkeypatch.setattr(verbs, "PAGE", PAGE)
    ns, label = configmaps(kube, 2 * PAGE)
    pages = list(kube.cluster.list_pages("v1", "ConfigMap", ns, label))
    assert [o["metadata"]["name"] for page in pages for o in page] == [
        f"cm-{i:02d}" for i in range(2 * PAGE)]
    assert all(len(page) <= PAGE for page in pages) and [len(p) for p in pages][:2] == [3, 3]
