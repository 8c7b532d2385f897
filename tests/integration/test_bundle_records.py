"""Each bundle's record is a Bundle object (issue 29, item 1), through the real CLI: created
with its CRD when missing, its spec's generation counting the changes Git asks of the bundle
(not the commits elsewhere) and its status observing them, conditions that keep their
transition times, a history of applies; and an upgrade loses nothing: records an earlier
release kept in ConfigMaps are moved over on first contact, then deleted."""

from __future__ import annotations

import json

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.inventory import NAMESPACE
from gitgate.apply.ledger import read_inventories
from gitgate.apply.legacyinventory import configmap_name, to_configmap
from gitgate.apply.recordcache import RecordCache
from gitgate.apply.recordformat import API_VERSION, KIND, bundle_name
from tests.conftest import write_files
from tests.support.hostile import gitgate
from tests.support.objects import shown
from tests.support.records import names, record
from tests.support.schemas import validate

pytestmark = pytest.mark.integration


def cm(name: str, namespace: str, value: str = "1") -> str:
    return (f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: "
            f"{namespace}}}\ndata: {{v: '{value}'}}\n")


def shop(tmp_path, run: str, ns: str, value: str = "1", extra: str = ""):
    return write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
        "ns/bundle.yaml": f"name: {run}-ns\nplacement: none\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "web/bundle.yaml": f"name: {run}-web\ndependsOn: [{run}-ns]\n",
        "web/app.yaml": cm("web", ns, value) + extra})


def conditions(obj: dict) -> dict[str, dict]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


def shop_applied(tmp_path, kube) -> tuple:
    """The shop repo applied once: its namespace, its root, the flags, web's record name and
    web's record."""
    ns = kube.ns("shop")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    root = shop(tmp_path, kube.run_id, ns)
    assert gitgate("apply", str(root), *flags).returncode == 0
    name = bundle_name(f"{kube.run_id}-web", kube.run_id)
    first = kube.cluster.get(API_VERSION, KIND, NAMESPACE, name)
    assert first is not None
    return ns, root, flags, name, first


def test_a_bundle_record_is_a_resource_kubernetes_tools_read(tmp_path, kube):
    ns, root, flags, name, first = shop_applied(tmp_path, kube)
    ready = conditions(first)["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "Applied")
    assert first["status"]["observedGeneration"] == first["metadata"]["generation"]
    # written once on the bundle's first pass: the write-ahead record already names the
    # digest the pass attempts, so the final record leaves the spec as it is
    assert first["metadata"]["generation"] == 1
    assert first["spec"]["digest"] == first["status"]["digest"] != ""
    assert first["status"]["verdict"] == "apply"
    assert [h["outcome"] for h in first["status"]["history"]] == ["applied"]
    assert first["status"]["history"][0]["by"] == "cli"

    write_files(root, {"ns/extra.yaml": cm("extra", ns)})  # a change of another bundle
    assert gitgate("apply", str(root), *flags).returncode == 0
    same = kube.cluster.get(API_VERSION, KIND, NAMESPACE, name)
    assert same["metadata"]["generation"] == 1  # asked nothing new of web: status only
    assert same["status"]["observedGeneration"] == 1

    write_files(root, {"web/app.yaml": cm("web", ns, "2")})  # a change of web's own
    assert gitgate("apply", str(root), *flags).returncode == 0
    second = kube.cluster.get(API_VERSION, KIND, NAMESPACE, name)
    assert second["metadata"]["generation"] == 2
    assert second["status"]["observedGeneration"] == 2
    assert second["spec"]["digest"] == second["status"]["digest"] != first["spec"]["digest"]
    assert len(second["status"]["history"]) == 2  # the digest changed: a second apply
    assert conditions(second)["Ready"]["lastTransitionTime"] == ready["lastTransitionTime"]

    write_files(root, {"gates/freeze.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        f"spec: {{bundles: [{kube.run_id}-web], reason: INC-9 checkout outage}}\n"),
        "web/app.yaml": cm("web", ns, "3")})
    gitgate("apply", str(root), *flags)
    held = kube.cluster.get(API_VERSION, KIND, NAMESPACE, name)
    said = conditions(held)
    assert (said["Ready"]["status"], said["Ready"]["reason"]) == ("False", "Held")
    assert said["Held"]["status"] == "True" and "INC-9" in said["Held"]["message"]
    assert len(held["status"]["history"]) == 2  # a hold applies nothing: no entry
    assert held["status"]["lastAppliedRevision"] == second["status"]["lastAppliedRevision"]


def test_an_upgrade_moves_configmap_records_into_bundles_and_loses_nothing(tmp_path,
                                                                          emulator):
    """The state an earlier release leaves: ConfigMap records and no Bundle type. `status`
    reads them as they are; the first pass moves them (what they list is still pruned when it
    leaves Git), and deletes them."""
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    admin = KubeCluster(load_client(kubeconfig))
    flags = ["--kubeconfig", kubeconfig]
    root = shop(tmp_path, "up", "shop", extra=cm("extra", "shop"))
    assert gitgate("apply", str(root), *flags).returncode == 0
    earlier = read_inventories(admin)
    for inventory in earlier.values():  # the earlier release's encoding of the same records
        admin.apply(to_configmap(inventory))
    admin.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                 "bundles.gitgate.io")  # and no Bundle type: its objects go with it
    assert emulator.state.object("gitgate.io", "bundles", NAMESPACE, "up-web") is None

    status = gitgate("status", *flags, "-o", "json")
    assert status.returncode == 0, status.stderr
    assert {b["name"] for b in json.loads(status.stdout)["bundles"]} == {"up-ns", "up-web"}

    write_files(root, {"web/app.yaml": cm("web", "shop")})  # `extra` leaves Git
    done = gitgate("apply", str(root), *flags, "-o", "json")
    assert done.returncode == 0, done.stderr
    web = next(b for b in json.loads(done.stdout)["bundles"] if b["name"] == "up-web")
    # the migrated record listed it
    assert [shown(r) for r in web["pruned"]] == ["ConfigMap shop/extra"]
    assert emulator.state.object("", "configmaps", "shop", "extra") is None
    for name in earlier:
        assert emulator.state.object("", "configmaps", NAMESPACE, configmap_name(name)) is None
    moved = record(admin, "up-web")
    assert moved is not None and names(moved) == {"web", "gitgate-up-web"}  # and its policy
    assert [h["outcome"] for h in moved.history] == ["applied"]  # this pass's


def test_events_say_each_transition_once_and_describe_shows_them(tmp_path, kube):
    ns = kube.ns("shop")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    web = f"{kube.run_id}-web"
    root = shop(tmp_path, kube.run_id, ns, extra=cm("extra", ns))
    assert gitgate("apply", str(root), *flags).returncode == 0
    assert gitgate("apply", str(root), *flags).returncode == 0  # nothing changed: no event
    write_files(root, {"gates/freeze.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        f"spec: {{bundles: [{web}], reason: INC-9 checkout outage}}\n")})
    gitgate("apply", str(root), *flags)
    gitgate("apply", str(root), *flags)  # still held: no second event
    (root / "gates" / "freeze.yaml").unlink()
    write_files(root, {"web/app.yaml": cm("web", ns, "2")})  # lifted, changed, extra pruned
    assert gitgate("apply", str(root), *flags).returncode == 0

    shown = gitgate("describe", web, *flags, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    described = json.loads(shown.stdout)
    validate(described, "BundleDescription")
    validate(json.loads(gitgate("get", *flags, "-o", "json").stdout), "BundleList")
    validate(json.loads(gitgate("history", web, *flags, "-o", "json").stdout), "BundleHistory")
    said = [(e["reason"], e["note"]) for e in described["events"]]
    assert [reason for reason, _ in said] == ["Applied", "Held", "Lifted", "Applied",
                                              "Pruned"], said
    assert "INC-9 checkout outage" in said[1][1] and "gates/freeze.yaml" in said[1][1]
    assert said[4][1] == "1 object(s) that left Git deleted"
    assert {c["type"]: c["status"] for c in described["conditions"]}["Ready"] == "True"

    text = gitgate("describe", web, *flags).stdout
    for words in ("Name:         " + web, "Conditions:", "Ready", "History:", "Events:",
                  "held by gate freeze (gates/freeze.yaml)"):
        assert words in text, words
    history = gitgate("history", web, *flags).stdout.splitlines()
    assert history[0].split() == ["REVISION", "DIGEST", "WHEN", "OUTCOME", "BY"]
    assert [line.split()[-2:] for line in history[1:]] == [["applied", "cli"]] * 2
    table = gitgate("get", *flags).stdout.splitlines()
    assert table[0].split() == ["NAME", "VERDICT", "READY", "CLUSTERS", "REVISION", "AGE",
                                "MESSAGE"]
    row = next(line.split() for line in table if line.startswith(web))
    assert row[1:3] == ["apply", "True"]
    missing = gitgate("describe", web + "x", *flags)
    assert missing.returncode == 2 and f"no bundle '{web}x' is recorded" in missing.stderr


def test_reconcile_through_the_api_reaches_a_running_loop_without_its_port(tmp_path, kube,
                                                                           tools):
    """`gitgate reconcile BUNDLE --kubeconfig K --wait`: an annotation on the Bundle; the
    loop (its interval an hour, so only the request can start a pass) watches its Bundles,
    applies the new commit, and acknowledges the request in the Bundle's status."""
    import threading
    from datetime import timedelta

    from tests.support.looping import Upstream, reconciler

    upstream = Upstream(tmp_path, kube)
    loop = reconciler(upstream, kube, tools, tmp_path, interval=3600.0,
                      status_interval=timedelta(hours=1))
    assert loop.tick() == "revision"
    watching = loop.watch_requests(kube.cluster)
    running = threading.Thread(target=loop.run, daemon=True)
    running.start()
    try:
        upstream.commit({"app/cm.yaml": upstream.configmap("two")}, "two")
        flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
        asked = gitgate("reconcile", f"{upstream.run}-app", *flags, "--wait",
                        "--timeout", "60s")
        assert asked.returncode == 0, asked.stdout + asked.stderr
        assert f"{upstream.run}-app: apply at " in asked.stdout
        live = kube.cluster.get("v1", "ConfigMap", upstream.ns, "settings")
        assert live["data"]["value"] == "two"
        again = gitgate("reconcile", "nothing-like-it", *flags)
        assert again.returncode == 2 and "matches no bundle" in again.stderr
    finally:
        loop.stop.set()
        loop.wake.set()
        running.join(timeout=30)
        assert watching.daemon  # it ends with the process, or at its watch's timeout


def test_a_pass_reads_only_the_records_that_changed_since_it_last_read_them(tmp_path, kube,
                                                                           monkeypatch):
    """`read_inventories` each pass of `gitgate run`: one list of the Bundles' metadata, then
    a read of each record whose resourceVersion it has not parsed yet (held to a real API
    server too)."""

    cache = RecordCache()  # as `run` keeps it
    ns = kube.ns("shop")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    root = shop(tmp_path, kube.run_id, ns)
    assert gitgate("apply", str(root), *flags).returncode == 0
    path = f"/namespaces/{NAMESPACE}/bundles"

    def reads() -> list[str]:
        return sorted(p.rpartition("/")[2] for m, p, *_ in kube.cluster.sent
                      if m == "GET" and path + "/" in p)

    first = read_inventories(kube.cluster, kube.run_id, cache)
    assert set(first) == {f"{kube.run_id}-ns", f"{kube.run_id}-web"}
    kube.cluster.sent.clear()
    again = read_inventories(kube.cluster, kube.run_id, cache)
    assert again == first and reads() == []  # nothing changed: the metadata list alone
    assert [m for m, p, *_ in kube.cluster.sent if p.endswith(path)] == ["GET"]

    write_files(root, {"web/app.yaml": cm("web", ns, "2")})
    assert gitgate("apply", str(root), *flags).returncode == 0
    kube.cluster.sent.clear()
    changed = read_inventories(kube.cluster, kube.run_id, cache)
    assert reads() == [bundle_name(f"{kube.run_id}-web", kube.run_id)]
    assert changed[f"{kube.run_id}-web"].revision != first[f"{kube.run_id}-web"].revision or \
        changed[f"{kube.run_id}-web"].digest != first[f"{kube.run_id}-web"].digest
    assert changed[f"{kube.run_id}-ns"] is first[f"{kube.run_id}-ns"]


def test_a_record_this_process_wrote_is_not_read_again_until_another_writes_it(
        tmp_path, kube, monkeypatch):
    """The API server's answer to a write of a record is kept at its new resourceVersion: the
    next pass's list of metadata names that version, so nothing is read. A write by anyone
    else after it (a newer version) is read as before (held to a real API server too)."""
    from dataclasses import replace

    from gitgate.apply import ledger

    cache = RecordCache()  # as `run` keeps it
    ns = kube.ns("shop")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert gitgate("apply", str(shop(tmp_path, kube.run_id, ns)), *flags).returncode == 0
    path = f"/namespaces/{NAMESPACE}/bundles"
    first = read_inventories(kube.cluster, kube.run_id, cache)
    web = f"{kube.run_id}-web"

    writer = ledger.Ledger({}, stored=ledger.stored_of(first), now="2026-11-26T22:00:00Z",
                           cache=cache)
    writer.write(kube.cluster, replace(first[web], message="Applied: written in-process"))
    kube.cluster.sent.clear()
    again = read_inventories(kube.cluster, kube.run_id, cache)
    assert [p for m, p, *_ in kube.cluster.sent if m == "GET"] == [
        p for m, p, *_ in kube.cluster.sent if m == "GET" and p.endswith(path)]  # the list
    assert again[web].message == "Applied: written in-process"
    assert again[f"{kube.run_id}-ns"] is first[f"{kube.run_id}-ns"]

    # another field manager writes the record after: its new version is read
    name = bundle_name(web, kube.run_id)
    kube.cluster.apply({"apiVersion": API_VERSION, "kind": KIND,
                        "metadata": {"name": name, "namespace": NAMESPACE},
                        "status": {"clusters": [{"name": "member9"}]}},
                       manager="someone-else", subresource="status")
    kube.cluster.sent.clear()
    third = read_inventories(kube.cluster, kube.run_id, cache)
    assert [p.rpartition("/")[2] for m, p, *_ in kube.cluster.sent
            if m == "GET" and path + "/" in p] == [name]
    assert third[web].message == "Applied: written in-process"


def test_a_record_is_claimed_so_karmadas_detector_leaves_it_and_an_old_one_is_claimed_next(
        tmp_path, kube):
    """Karmada's resource detector takes any object it does not skip for a template and keeps
    it on a waiting list that each new policy reads object by object; a Bundle carries Karmada's
    claimed-by label, which takes it off that list (and no policy may propagate it). A record
    an earlier gitgate wrote without the label gets it at its next write."""
    from gitgate.apply.recordformat import CLAIMED_BY, CLAIMED_LABEL

    _, root, flags, name, first = shop_applied(tmp_path, kube)
    assert first["metadata"]["labels"][CLAIMED_LABEL] == CLAIMED_BY

    # as an earlier gitgate left it: the label taken off by its own field manager's apply
    # (and no write-ahead intent in the spec: that gitgate wrote it into the status)
    path = kube.cluster.path_for(API_VERSION, KIND, NAMESPACE, name)
    status, body = kube.cluster.request(
        "PATCH", path, body={"metadata": {"labels": {CLAIMED_LABEL: None}},
                             "spec": {"intent": None}},
        content_type="application/merge-patch+json", query={"fieldManager": "gitgate"})
    assert status == 200, body
    earlier = body["metadata"]["generation"]
    assert CLAIMED_LABEL not in kube.cluster.get(API_VERSION, KIND, NAMESPACE, name)[
        "metadata"].get("labels", {})

    assert gitgate("apply", str(root), *flags).returncode == 0  # nothing to write
    assert CLAIMED_LABEL not in kube.cluster.get(API_VERSION, KIND, NAMESPACE, name)[
        "metadata"].get("labels", {})

    write_files(root, {"gates/freeze.yaml": (  # web's status moves, its spec does not
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        f"spec: {{bundles: [{kube.run_id}-web], reason: a freeze}}\n")})
    assert gitgate("apply", str(root), *flags).returncode == 0
    again = kube.cluster.get(API_VERSION, KIND, NAMESPACE, name)
    assert again["metadata"]["labels"][CLAIMED_LABEL] == CLAIMED_BY
    assert again["metadata"]["generation"] == earlier  # the spec as it was


def test_a_pass_lists_the_records_from_the_servers_cache_never_older_than_its_own_writes(
        tmp_path, kube, monkeypatch):
    """`gitgate run` reads etcd for its first list of the records, and again after its share
    moved; otherwise it asks the API server's watch cache for a list at least as new as the
    newest record it listed or wrote (`resourceVersionMatch=NotOlderThan`), so its own last
    write is always in it. A cache that cannot answer (504) costs a read of etcd, never a
    stale record (held to a real API server too)."""
    from dataclasses import replace

    from gitgate.apply import ledger

    cache = RecordCache()  # as `run` keeps it
    ns = kube.ns("shop")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert gitgate("apply", str(shop(tmp_path, kube.run_id, ns)), *flags).returncode == 0
    path = f"/namespaces/{NAMESPACE}/bundles"
    web = f"{kube.run_id}-web"

    def lists() -> list[tuple[str, str]]:
        return [(q.get("resourceVersion", ""), q.get("resourceVersionMatch", ""))
                for m, p, q, _ in kube.cluster.sent if m == "GET" and p.endswith(path)]

    kube.cluster.forget()
    first = read_inventories(kube.cluster, kube.run_id, cache)
    assert lists() == [("", "")]  # the first: from etcd

    writer = ledger.Ledger({}, stored=ledger.stored_of(first), now="2026-11-27T00:30:00Z",
                           cache=cache)
    writer.write(kube.cluster, replace(first[web], message="Applied: the newest write"))
    written = kube.cluster.get(API_VERSION, KIND, NAMESPACE, bundle_name(web, kube.run_id))
    kube.cluster.forget()
    second = read_inventories(kube.cluster, kube.run_id, cache)
    assert lists() == [(written["metadata"]["resourceVersion"], "NotOlderThan")]
    assert second[web].message == "Applied: the newest write"

    cache.read_consistently()  # as the loop asks when its share moved
    kube.cluster.forget()
    assert read_inventories(kube.cluster, kube.run_id, cache)[web].message == second[web].message
    assert lists() == [("", "")]

    # a version the cache never reaches (as a lagging cache): refused, then read from etcd
    far = str(int(written["metadata"]["resourceVersion"]) + 10_000_000)
    cache.note_version(far)
    kube.cluster.forget()
    assert read_inventories(kube.cluster, kube.run_id, cache)[web].message == second[web].message
    assert lists() == [(far, "NotOlderThan"), ("", "")]
    kube.cluster.forget()  # and the version it could not reach is forgotten
    assert read_inventories(kube.cluster, kube.run_id, cache)[web].message == second[web].message
    assert lists() == [(written["metadata"]["resourceVersion"], "NotOlderThan")]
