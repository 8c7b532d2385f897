"""Sharding across replicas (issue 31, item 1) over the API emulator: replicas find each other
through their Leases and agree on an assignment; a replica acts only once every live replica
acknowledged it; a replica whose Lease runs out loses its bundles to the others and writes
nothing of its old pass when it comes back; each bundle is written by one replica only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import git
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.inventory import NAMESPACE, system_namespace
from gitgate.apply.recordcache import RecordCache
from gitgate.apply.recordformat import bundle_name
from gitgate.apply.work import ApplyOptions
from gitgate.cli.run import page_source
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.model.shardmap import owner
from gitgate.output.webui import ApiSource
from gitgate.passes.recorded import read_parts, record_part
from gitgate.passes.replicas import ACKNOWLEDGED, INCARNATION, LEASE_API
from gitgate.passes.shards import Membership
from gitgate.source.localgit import LocalCheckout
from tests.conftest import REPO_ROOT, set_identity, write_files
from tests.support.http import free_port, get, until
from tests.support.looping import T0, Clock
from tests.support.shards import sharing_identities

pytestmark = pytest.mark.integration
NS = "shop"
APPS = [f"app{i}" for i in range(8)]


class Clocks:
    """One wall clock and one monotonic clock for every replica of a test."""

    def __init__(self) -> None:
        self.wall = datetime(2026, 11, 24, 3, tzinfo=UTC)
        self.mono = 1000.0

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds


def member(cluster, instance: str, identity: str, clocks: Clocks,
           expected: int = 1) -> Membership:
    found = Membership(cluster, instance, identity, lease_duration=15, renew_deadline=10,
                       retry_period=2, wall_clock=lambda: clocks.wall,
                       monotonic=lambda: clocks.mono, expected_replicas=expected)
    found.clocks = clocks  # for `leave`
    return found


def leave(departing: Membership, *staying: Membership) -> None:
    """`departing` stops (its Lease deleted); the others see it vanish, then renew every
    retry period (their terms go on) until one lease duration has passed: they take its
    bundles only then, as nothing in a Lease can say its holder stopped writing."""
    departing.stop()
    for one in staying:
        one.look()
    for _ in range(8):
        departing.clocks.advance(2)
        for one in staying:
            one.renew()


def test_replicas_agree_take_over_and_come_back(kube):
    kube.cluster.apply(system_namespace())
    clocks = Clocks()
    a, b = (member(kube.cluster, kube.run_id, name, clocks) for name in ("a", "b"))
    a.renew()
    turn = a.turn()
    assert turn.acting and turn.shards.members == ("a",)

    b.renew()  # b joins: a waits until b acknowledged the new assignment
    turn = a.turn()
    assert turn.shards.members == ("a", "b") and turn.waiting_for == ("b",)
    assert not turn.acting
    assert b.turn().acting and a.turn().acting
    mine = {n for n in APPS if a.turn().owns(n)}
    theirs = {n for n in APPS if b.turn().owns(n)}
    assert mine | theirs == set(APPS) and not mine & theirs

    clocks.advance(16)  # b stops renewing (paused, dead): its Lease runs out
    a.renew()
    turn = a.turn()
    assert turn.acting and turn.shards.members == ("a",)
    assert all(turn.owns(n) for n in APPS)
    assert b.fence.term() is None  # b's own fence stopped it before the Lease expired

    b.renew()  # b comes back: a new term, a new assignment, acknowledged by both first
    turn = b.turn()
    assert turn.shards.members == ("a", "b") and not turn.acting
    assert a.turn().acting and b.turn().acting

    leave(b, a)  # a clean shutdown: its bundles are a's one lease duration later
    turn = a.turn()
    assert turn.acting and turn.shards.members == ("a",)


def two_acting(kube, namespace: str) -> tuple[str, Clocks, Membership, Membership]:
    """Replicas a and b, both acting on the two-member assignment, and a namespace of the
    test's to write into."""
    kube.cluster.apply(system_namespace())
    ns = kube.ns(namespace)
    kube.cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    clocks = Clocks()
    a, b = (member(kube.cluster, kube.run_id, name, clocks) for name in ("a", "b"))
    a.renew()
    b.renew()
    a.turn()
    assert b.turn().acting and a.turn().acting
    return ns, clocks, a, b


def test_a_deleted_lease_hands_nothing_over_and_stops_its_holders_pass(kube):
    """Someone deletes replica a's Lease while a's pass writes. b does not take a's bundles
    while a may still write (a vanished Lease counts as live for a lease duration from when b
    saw it vanish), and a's next renewal, which has to make the Lease anew, starts a new term:
    the pass begun under the old Lease writes nothing more. Only after a lease duration with
    no renewal from a does b take a's bundles."""
    from gitgate.errors import KubeError, Reason
    from gitgate.passes.fencing import FencedCluster
    from tests.support.objects import cm

    ns, clocks, a, b = two_acting(kube, "fenced")
    in_flight = FencedCluster(kube.cluster, a.fence, a.turn().term)  # a's pass, writing
    in_flight.apply(cm("written", ns))

    kube.cluster.delete(LEASE_API, "Lease", NAMESPACE, a.name)
    clocks.advance(1)
    b.renew()
    turn = b.turn()
    assert turn.shards.members == ("a", "b") and turn.acting  # nothing handed over yet
    assert "a" in turn.live

    clocks.advance(1)
    a.renew()  # the renewal makes the Lease anew: another object, a new term
    with pytest.raises(KubeError) as refused:
        in_flight.apply(cm("late", ns))
    assert refused.value.reason == Reason.FENCED
    assert kube.cluster.get("v1", "ConfigMap", ns, "late") is None

    for _ in range(9):  # a is gone for good now: nothing renews its Lease
        clocks.advance(2)
        b.renew()
        b.turn()
    turn = b.turn()
    assert turn.acting and turn.shards.members == ("b",)


@pytest.mark.parametrize("tampered", [
    {"metadata": {"annotations": {"gitgate.io/released": "true"}}},
    {"spec": {"leaseDurationSeconds": 1}},
    {"spec": {"renewTime": "2000-01-01T00:00:00.000000Z"}},
    {"spec": {"holderIdentity": "someone-else"}},
], ids=["released", "short-duration", "backdated", "holder"])
def test_nothing_written_into_a_live_replicas_lease_hands_its_bundles_over(kube, tampered):
    """Anyone who may write Leases writes into a live replica's: a "released" mark, a short
    duration, an old renewal time, another holder. The others take none of its bundles while
    it may still write: only a lease duration without any change to its Lease ends it."""
    from gitgate.passes.fencing import FencedCluster
    from tests.support.objects import cm

    ns, clocks, a, b = two_acting(kube, "tampered")
    in_flight = FencedCluster(kube.cluster, a.fence, a.turn().term)
    a_share = [name for name in APPS if a.turn().owns(name)]
    kube.cluster.apply({"apiVersion": LEASE_API, "kind": "Lease",
                        "metadata": {"name": a.name, "namespace": NAMESPACE,
                                     **tampered.get("metadata", {})},
                        **({"spec": tampered["spec"]} if "spec" in tampered else {})},
                       manager="kubectl", force=True)

    def b_takes_none_of_as_bundles() -> None:
        turn = b.turn()
        assert "a" in turn.live, turn
        assert not (turn.acting and any(turn.owns(name) for name in a_share)), turn

    for _ in range(3):
        clocks.advance(1)
        b.renew()
        b_takes_none_of_as_bundles()
        in_flight.apply(cm("written-by-a", ns))  # a's pass may go on: nobody else acts
    clocks.advance(1)
    a.renew()  # a renews on: it stays, whatever was written into its Lease
    for _ in range(8):
        clocks.advance(2)
        a.renew()
        b.renew()
        b_takes_none_of_as_bundles()


def test_a_lease_that_claims_an_hour_counts_for_the_configured_duration_only(kube):
    """A Lease with the replica labels that nobody renews, claiming 3600 s, holds the others
    back for one configured lease duration at most (each replica trusts what it saw renew,
    never a Lease's own duration)."""
    from gitgate.model.ownership import INSTANCE_LABEL
    from gitgate.passes.shards import REPLICA_LABEL, micro_time

    kube.cluster.apply(system_namespace())
    clocks = Clocks()
    a = member(kube.cluster, kube.run_id, "a", clocks)
    kube.cluster.apply({
        "apiVersion": LEASE_API, "kind": "Lease",
        "metadata": {"name": f"gitgate-{kube.run_id}-replica-ghost", "namespace": NAMESPACE,
                     "labels": {INSTANCE_LABEL: kube.run_id, REPLICA_LABEL: "true"}},
        "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 3600,
                 "renewTime": micro_time(clocks.wall)}})
    a.renew()
    turn = a.turn()
    assert "ghost" in turn.live and not turn.acting  # it may be a replica that just started
    for _ in range(8):
        clocks.advance(2)
        a.renew()
        a.turn()
    turn = a.turn()
    assert turn.live == ("a",) and turn.acting and turn.shards.members == ("a",)


def test_two_processes_given_one_identity_never_act_together(kube):
    kube.cluster.apply(system_namespace())
    clocks = Clocks()
    other = member(kube.cluster, kube.run_id, "b", clocks)
    first, twin = (member(kube.cluster, kube.run_id, "a", clocks) for _ in range(2))
    for one in (other, first):
        one.renew()
    first.turn()  # acknowledges the assignment of a and b; b has not yet
    assert other.turn().acting and first.turn().acting

    twin.renew()  # a second process started as `a`: it renewed last, so it carries on
    turn = first.turn()
    assert first.stepped_back and not turn.acting and "--identity" in turn.said()
    assert first.fence.term() is None  # a pass in flight writes nothing more
    assert twin.turn().acting and not twin.stepped_back
    clocks.advance(3)
    first.look()  # stepped back for good: it renews nothing, so the twin never sees it
    assert twin.turn().acting and first.turn().acting is False
    lease = kube.cluster.get(LEASE_API, "Lease", NAMESPACE, first.name)
    assert lease["metadata"]["annotations"][INCARNATION] == twin.incarnation
    first.stop()  # its shutdown leaves the Lease to the twin
    assert kube.cluster.get(LEASE_API, "Lease", NAMESPACE, first.name) is not None
    assert twin.turn().acting


def test_a_restart_under_the_same_identity_is_not_taken_for_a_twin(kube):
    kube.cluster.apply(system_namespace())
    clocks = Clocks()
    before = member(kube.cluster, kube.run_id, "a", clocks)
    before.renew()
    assert before.turn().acting
    # killed (its Lease stays, naming its incarnation), then started again as `a`
    after = member(kube.cluster, kube.run_id, "a", clocks)
    assert after.replicas()[0].incarnation == before.incarnation  # read before its renewal
    after.renew()
    turn = after.turn()
    assert turn.acting and not after.stepped_back


def test_a_cold_start_waits_for_the_expected_replicas_then_is_shared(kube):
    kube.cluster.apply(system_namespace())
    clocks = Clocks()
    a = member(kube.cluster, kube.run_id, "a", clocks, expected=2)
    a.renew()
    turn = a.turn()  # alone: it would plan and apply the whole repo by itself
    assert not turn.acting and turn.gathering == 1 and "1 more replica" in turn.said()
    clocks.advance(5)
    b = member(kube.cluster, kube.run_id, "b", clocks, expected=2)
    b.renew()
    assert not a.turn().acting  # b has not acknowledged the two-member assignment yet
    assert b.turn().acting and a.turn().acting
    assert a.turn().shards.members == ("a", "b")

    leave(b, a)  # once gathered, a departure stalls the survivor no longer than that
    turn = a.turn()
    assert turn.acting and turn.shards.members == ("a",)


def test_a_peer_that_never_comes_holds_the_start_for_one_lease_duration_at_most(kube):
    kube.cluster.apply(system_namespace())
    clocks = Clocks()
    a = member(kube.cluster, kube.run_id, "a", clocks, expected=3)
    b = member(kube.cluster, kube.run_id, "b", clocks, expected=3)
    for step in range(7):  # renewing every 2 s, as the thread does
        a.renew()
        b.renew()
        turns = a.turn(), b.turn()
        assert not any(t.acting for t in turns) and {t.gathering for t in turns} == {1}, step
        clocks.advance(2)
    clocks.advance(1)  # 15 s since the start: the third replica is not waited for any more
    a.renew()
    b.renew()
    assert a.turn().acting and b.turn().acting
    assert a.turn().shards.members == ("a", "b")


def repo(tmp_path, value: str):
    files = {"gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: "
                             "[member1]}}}\n",
             "ns/bundle.yaml": "name: ns\n",
             "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n"}
    for app in APPS:
        files[f"{app}/bundle.yaml"] = f"name: {app}\ndependsOn: [ns]\n"
        files[f"{app}/cm.yaml"] = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {app}, "
                                   f"namespace: {NS}}}\ndata: {{value: {value}}}\n")
    return write_files(tmp_path / "repo", files)


def replica(root, kubeconfig, tools, identity: str, clocks: Clocks,
            records: RecordCache | None = None) -> Reconciler:
    api = load_client(str(kubeconfig))
    api.user_agent = f"gitgate-test ({identity})"
    cluster = KubeCluster(api)
    loop = Reconciler(LocalCheckout(root), cluster, tools,
                      LoopSettings(interval=timedelta(seconds=1),
                                   apply=ApplyOptions(now=T0)),
                      clock=Clock(T0), shards=member(cluster, "default", identity, clocks),
                      records=records)
    loop.state.leading = True
    return loop


def two_replicas(tmp_path, emulator, tools,
                 records: bool = False) -> tuple[Reconciler, Reconciler]:
    """Replicas `a` and `b` of the repo at value "one", their Leases written (not yet
    agreed: their first turns do that)."""
    root = repo(tmp_path, "one")
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    clocks = Clocks()
    a, b = (replica(root, kubeconfig, tools, name, clocks, RecordCache() if records else None)
            for name in ("a", "b"))
    a.cluster.apply(system_namespace())  # as `run` makes sure of it before the Leases
    for loop in (a, b):
        loop.shards.renew()
    return a, b


def turns(*loops: Reconciler) -> None:
    """Each replica's turn and tick, as `run` takes them, a minute apart (a bundle waiting
    for a dependency of the other shard is tried again after its backoff)."""
    for _ in range(3):
        for loop in loops:
            if loop.turns.take():
                loop.tick()
            loop.clock.advance(seconds=60)


def writers(emulator, name: str, since: int = 0) -> set[str]:
    """The replicas that wrote the ConfigMap `name` (by their User-Agent), from the
    `since`-th write on."""
    return {r.user_agent.rpartition("(")[2].rstrip(")") for r in emulator.state.writes()[since:]
            if r.path.endswith(f"/namespaces/{NS}/configmaps/{name}")}


def test_each_bundle_is_written_by_its_owner_only_and_taken_over_when_it_leaves(
        tmp_path, emulator, tools):
    a, b = two_replicas(tmp_path, emulator, tools)
    turns(a, b)
    owned = {name: "a" if a.state.turn.owns(name) else "b" for name in APPS}
    assert set(owned.values()) == {"a", "b"}  # both take part
    for name in APPS:
        assert writers(emulator, name) == {owned[name]}, name
    records = {r["spec"]["bundle"] for r in a.cluster.list_objects(
        "gitgate.io/v1alpha1", "Bundle", "gitgate-system")}
    assert set(APPS) <= records

    # b leaves: a takes every bundle over and applies the next change to all of them
    leave(b.shards, a.shards)
    repo(tmp_path, "two")
    a.request_pass()
    turns(a)
    assert all(a.state.turn.owns(name) for name in APPS)
    for name in APPS:
        live = emulator.state.object("", "configmaps", NS, name)
        assert live["data"]["value"] == "two", name
        assert "a" in writers(emulator, name)


def test_a_replica_whose_lease_lapsed_writes_no_status_for_its_former_share(
        tmp_path, emulator, tools):
    """The Bundle status a replica writes after a pass (what Karmada reports) goes through the
    same fence as the pass: once its Lease lapsed, nothing of it is written."""
    a, b = two_replicas(tmp_path, emulator, tools)
    turns(a, b)
    a.shards.fence.lapse()  # paused past its renew deadline, or its Lease taken
    seen = len(emulator.state.writes())
    a.observer._recorded.clear()  # as after a restart: every bundle's status is due
    a.observer.refresh_status()
    late = [r.path for r in emulator.state.writes()[seen:]
            if r.user_agent.rpartition("(")[2].rstrip(")") == "a"]
    assert late == []


def test_a_share_that_moved_is_read_from_etcd_first(tmp_path, emulator, tools, monkeypatch):
    """A replica lists its records from the API server's cache between passes, but the first
    list after its share moved reads etcd: what the former holder wrote last is read as
    written, however far the cache lags."""
    a, b = two_replicas(tmp_path, emulator, tools, records=True)  # as `run` keeps them
    cache = a.records
    assert cache is not None
    turns(a, b)
    before = a.state.turn.shards.digest
    a.request_pass()
    assert a.turns.take()
    a.tick()
    assert not cache.consistent_due and cache.since()  # from the cache

    leave(b.shards, a.shards)
    a.clock.advance(seconds=60)
    assert a.turns.take() and a.state.turn.shards.digest != before
    assert cache.consistent_due and not cache.since()
    emulator.state.requests.clear()
    a.tick()
    lists = [r.query for r in emulator.state.requests
             if r.method == "GET" and r.path.endswith("/namespaces/gitgate-system/bundles")]
    assert lists and "resourceVersion" not in lists[0]  # the takeover's list: of etcd
    assert not cache.consistent_due


def attempted(cluster: KubeCluster) -> dict[str, str]:
    """Each bundle's record: the revision its last pass attempted."""
    return {r["spec"]["bundle"]: r["status"]["lastAttemptedRevision"]
            for r in cluster.list_objects("gitgate.io/v1alpha1", "Bundle", "gitgate-system")}


def test_a_pass_whose_share_moves_leaves_the_records_that_only_follow_the_commit(
        tmp_path, emulator, tools):
    """b dies while a's pass writes the records of a commit that changed one of a's bundles:
    the change's record goes, the rest wait for the pass over the new share, which takes b's
    bundles over without queueing behind them and then writes every record."""
    a, b = two_replicas(tmp_path, emulator, tools)
    turns(a, b)
    mine = sorted(name for name in APPS if a.state.turn.owns(name))
    assert 2 <= len(mine) < len(APPS)
    root = repo(tmp_path, "one")
    write_files(root, {f"{mine[0]}/cm.yaml": (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {mine[0]}, namespace: {NS}}}\n"
        "data: {value: two}\n")})
    a.source.revision = "c0ffee2"  # the commit that brings it (the folder is not in Git)
    records: list[str] = []
    write = a.cluster.apply

    def apply(obj, **kw):  # b's Lease runs out as a's first record goes in
        if obj.get("kind") == "Bundle" and kw.get("subresource") == "status":
            records.append(obj["metadata"]["name"])
            if records[-1] == bundle_name(mine[0]):
                leave(b.shards, a.shards)
                a.shards.look()  # the Lease thread's beat: it sees the new assignment
        return write(obj, **kw)

    a.cluster.apply = apply
    # one record at a time, so the order shows (with 8 in flight, those already sent go)
    a.settings = replace(a.settings, apply=replace(a.settings.apply, concurrency=1))
    a.request_pass()
    assert a.turns.take()
    a.tick()
    # `ns` (others wait for it) may go first; after the change's record, none of a's share
    assert records[-1] == bundle_name(mine[0]) and set(records) <= {"ns", records[-1]}
    cluster = KubeCluster(load_client(str(tmp_path / "kubeconfig")))
    revisions = attempted(cluster)
    assert revisions[mine[0]] == "c0ffee2"
    assert {revisions[name] for name in mine[1:]} == {"unknown"}  # left for the next pass

    records.clear()
    a.clock.advance(seconds=60)
    assert a.turns.take() and all(a.state.turn.owns(name) for name in APPS)
    a.tick()  # the takeover pass writes what was left, and b's bundles' records
    assert set(records) >= {bundle_name(name) for name in APPS[1:]} - {bundle_name(mine[0])}
    revisions = attempted(cluster)
    assert {revisions[name] for name in APPS} == {"c0ffee2"}


def test_what_the_other_replica_waits_for_is_recorded_before_the_rest_of_the_pass(
        tmp_path, emulator, tools):
    """Every app depends on `ns`. Its owner writes `ns` and records it before it writes any
    of its own apps, so the other replica's apps need not wait for that whole pass."""
    a, b = two_replicas(tmp_path, emulator, tools)
    for _ in range(2):  # the second turn: each has seen the other's acknowledgement
        acting = [loop.turns.take() for loop in (a, b)]
    assert all(acting)
    owner, other = (a, b) if a.state.turn.owns("ns") else (b, a)
    mine = [name for name in APPS if owner.state.turn.owns(name)]
    assert mine and len(mine) < len(APPS)
    since = len(emulator.state.writes())
    owner.tick()
    written = [r.path for r in emulator.state.writes()[since:]]
    recorded = max(at for at, path in enumerate(written)  # the record after the write
                   if path.endswith(f"/bundles/{bundle_name('ns', 'default')}/status"))
    apps = [at for at, path in enumerate(written)
            if any(path.endswith(f"/configmaps/{name}") for name in mine)]
    assert apps and recorded < min(apps)
    other.tick()  # the other replica's apps go out in its next pass
    for name in APPS:
        assert emulator.state.object("", "configmaps", NS, name)["data"]["value"] == "one"

    # each replica observes what Karmada did with its own share only (reads, series, memory)
    observed = {}
    for loop in (a, b):
        loop.observer.refresh_status()
        observed[loop.shards.identity] = set(loop.state.observation.bundles)
        assert observed[loop.shards.identity] == {
            name for name in ("ns", *APPS) if loop.state.turn.owns(name)}
    assert observed["a"] | observed["b"] == {"ns", *APPS} and not observed["a"] & observed["b"]


def test_the_page_shows_every_replicas_changes_and_forgets_a_departed_ones(
        tmp_path, emulator, tools):
    """Each replica records the overview of its own bundles; the page (`gitgate ui`, or any
    replica's) merges them by the assignment, and the part of a replica that left is ignored,
    then deleted by the replica holding the overview."""
    a, b = two_replicas(tmp_path, emulator, tools)
    turns(a, b)
    repo(tmp_path, "two")
    for loop in (a, b):
        loop.request_pass()
    turns(a, b)
    page = ApiSource(a.cluster, "default", a.clock, "test", 5)
    changes = page.snapshot().overview["changes"]
    assert set(APPS) <= set(changes), changes.keys()  # both replicas' bundles
    assert set(read_parts(a.cluster, "default", "overview")) == {"a", "b"}
    served = page_source(b, 5).snapshot()  # a replica's own page shows them all too
    assert set(APPS) <= set(served.overview["changes"])

    # b's part is edited to claim a's bundles with a forged change: it is not taken while a
    # owns them, and is deleted once b has left
    forged = {name: {"revision": "forged"} for name in APPS}
    record_part(a.cluster, "default", "overview", "b", {"changes": forged, "rollouts": {
        name: {"forged": True} for name in APPS}})
    page = ApiSource(a.cluster, "default", a.clock, "test", 0)
    merged = page.snapshot().overview
    for name in APPS:
        if a.state.turn.owns(name):
            assert merged["changes"][name] != {"revision": "forged"}, name
            assert name not in merged["rollouts"], name
    leave(b.shards, a.shards)
    turns(a)
    assert set(read_parts(a.cluster, "default", "overview")) == {"a"}
    merged = ApiSource(a.cluster, "default", a.clock, "test", 0).snapshot().overview
    assert "forged" not in json.dumps(merged)


class Upstream:
    """The repo the replicas follow: a bare repo pushed to from a working folder."""

    def __init__(self, tmp_path):
        self.root = repo(tmp_path, "one")
        self.work = git.Repo.init(self.root, initial_branch="main")
        set_identity(self.work, "Dev", "dev@example.com")
        git.Repo.init(tmp_path / "upstream.git", bare=True, initial_branch="main")
        self.work.create_remote("origin", str(tmp_path / "upstream.git"))
        self.url = f"file://{tmp_path / 'upstream.git'}"
        self.push("initial")

    def push(self, message: str) -> None:
        self.work.git.add("-A")
        self.work.git.commit("-m", message)
        self.work.git.push("origin", "main")

    def set_value(self, tmp_path, value: str) -> None:
        repo(tmp_path, value)
        self.push(value)


def acting(port: int) -> bool:
    status, body = get(f"http://127.0.0.1:{port}/status")
    return status == 200 and bool(json.loads(body).get("shard", {}).get("acting"))


def identity_of(port: int) -> str:
    """The identity a `gitgate run --shard` names itself with, from its /status."""
    return json.loads(get(f"http://127.0.0.1:{port}/status")[1])["shard"]["identity"]


def start_replicas(tmp_path, upstream, kubeconfig, identities):
    """Two `gitgate run --shard` processes (a 6 s Lease), their ports and their logs."""
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    ports = [free_port(), free_port()]
    replicas = [subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "run", "--shard", "--repo", upstream.url,
         "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{ports[index]}",
         "--interval", "1s", "--status-interval", "1s", "--lease-duration", "6",
         "--identity", identities[index], "--cache-dir", str(tmp_path / f"cache-{index}")],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=logs[index].open("w"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"}) for index in range(2)]
    return replicas, ports, logs


def check_fencing(writes, stopped_at: int, paused: str | None) -> None:
    """From the API server's log, in order:
    (a) every write of a bundle's object is made by the replica that owns the bundle under
        the assignment it last acknowledged (its Lease's annotation, written before it acts);
    (b) the replica paused at write `stopped_at` writes no bundle object after it until an
        assignment that has it again was agreed (the rest of its old pass is fenced off);
    (c) once an object was written under an assignment, it is never written under an older
        one (the same members agreed again later count as a newer one)."""
    members: dict[str, tuple[str, ...]] = {}
    made: dict[str, int] = {}  # digest -> index of the latest write of that assignment
    acked: dict[str, str] = {}  # replica -> the digest its Lease acknowledges
    newest: dict[str, int] = {}  # object -> the newest assignment it was written under
    rejoined = False
    for index, request in enumerate(writes):
        agent = request.user_agent.rpartition("(")[2].rstrip(")")
        body = request.body if isinstance(request.body, dict) else {}
        if request.path.endswith("/configmaps/gitgate.shards"):
            doc = json.loads(body["data"]["shards"])
            members[doc["digest"]] = tuple(doc["members"])
            made[doc["digest"]] = index
            rejoined = rejoined or (index > stopped_at and paused in doc["members"])
        elif "/leases/" in request.path and "-replica-" in request.path:
            digest = ((body.get("metadata") or {}).get("annotations") or {}).get(ACKNOWLEDGED)
            if digest:
                acked[(body.get("spec") or {})["holderIdentity"]] = digest
        elif f"/namespaces/{NS}/configmaps/" in request.path:
            name = request.path.rpartition("/")[2]
            assert agent in acked, (index, agent, "wrote before acknowledging")
            digest = acked[agent]
            assert owner(name, members[digest]) == agent, (index, name, agent, digest)
            assert made[digest] >= newest.get(name, -1), (index, name, "older assignment")
            newest[name] = made[digest]
            if paused is not None and agent == paused and index > stopped_at:
                assert rejoined, (index, name, "a stale write after the pause")


def values(emulator) -> dict[str, str | None]:
    return {app: ((emulator.state.object("", "configmaps", NS, app) or {}).get("data") or {})
            .get("value") for app in APPS}


def assignment(emulator) -> list[str]:
    found = emulator.state.object("", "configmaps", "gitgate-system", "gitgate.shards")
    return json.loads(found["data"]["shards"])["members"] if found else []


def test_two_processes_share_the_bundles_and_one_paused_writes_nothing_stale(tmp_path,
                                                                           emulator):
    upstream = Upstream(tmp_path)
    identities = sharing_identities(APPS)
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    replicas, ports, logs = start_replicas(tmp_path, upstream, kubeconfig, identities)
    try:
        until(lambda: set(values(emulator).values()) == {"one"}, 60, "every bundle applied")
        until(lambda: all(acting(port) for port in ports), 30, "both replicas act")
        paused_identity = identity_of(ports[0])
        assert paused_identity == identities[0]
        seen = len(emulator.state.writes())
        upstream.set_value(tmp_path, "two")
        until(lambda: set(values(emulator).values()) == {"two"}, 60, "a change applied")
        shared = {app: writers(emulator, app, since=seen) for app in APPS}
        assert len(set().union(*shared.values())) == 2, shared  # both replicas take part

        # a partition: one replica is paused (maybe mid-pass) past its Lease, changes come in
        upstream.set_value(tmp_path, "three")
        time.sleep(0.3)
        replicas[0].send_signal(signal.SIGSTOP)
        paused_at = time.monotonic()
        stopped_at = len(emulator.state.writes())
        paused_agent = paused_identity
        until(lambda: assignment(emulator) == [identity_of(ports[1])], 30,
              "the other replica alone in the assignment once the Lease ran out")
        upstream.set_value(tmp_path, "four")
        until(lambda: set(values(emulator).values()) == {"four"}, 60,
              "the other replica applies every bundle, the paused one's too")
        took_over = time.monotonic() - paused_at
        replicas[0].send_signal(signal.SIGCONT)
        until(lambda: len(assignment(emulator)) == 2, 30, "the paused replica back in")
        upstream.set_value(tmp_path, "five")
        until(lambda: set(values(emulator).values()) == {"five"}, 60, "both apply again")

        check_fencing(emulator.state.writes(), stopped_at, paused_agent)
        # the write-ahead records stay whole: each bundle's lists its ConfigMap
        cluster = KubeCluster(load_client(str(kubeconfig)))
        records = {r["spec"]["bundle"]: r for r in cluster.list_objects(
            "gitgate.io/v1alpha1", "Bundle", "gitgate-system")}
        for app in APPS:
            listed = [o["name"] for o in records[app]["status"]["objects"]]
            assert app in listed, records[app]["status"]
        # `status` names each bundle's replica, as the assignment gives it
        shown = subprocess.run([sys.executable, "-m", "gitgate.cli", "status", "-o", "json",
                                "--kubeconfig", str(kubeconfig)], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=60)
        shards = {b["name"]: b["shard"] for b in json.loads(shown.stdout)["bundles"]}
        members = assignment(emulator)
        assert {shards[app] for app in APPS} == set(members)
        assert all(shards[app] == owner(app, tuple(sorted(members))) for app in APPS)
        metrics = get(f"http://127.0.0.1:{ports[1]}/metrics")[1].decode()
        assert "gitgate_shard_acting 1.0" in metrics and "gitgate_shard_replicas 2.0" in metrics
        families = {f.name: f for f in text_string_to_metric_families(metrics)}
        timed = {(s.labels["verb"], s.labels["resource"]): s.value
                 for s in families["gitgate_api_request_duration_seconds"].samples
                 if s.name.endswith("_count")}
        for request in (("GET", "bundles"), ("PATCH", "leases"), ("PATCH", "configmaps"),
                        ("PATCH", "bundles/status")):  # the list, the Lease, an object, a record
            assert timed.get(request, 0) >= 1, (request, timed)
        codes = {(s.labels["verb"], s.labels["code"]): s.value
                 for s in families["gitgate_api_requests"].samples
                 if s.name.endswith("_total")}
        assert codes[("PATCH", "200")] >= 4 and codes[("GET", "200")] >= 1
        print(f"takeover after SIGSTOP with a 6 s Lease: {took_over:.1f} s")
    finally:
        for process in replicas:
            process.send_signal(signal.SIGCONT)
            process.terminate()
        codes = [process.wait(20) for process in replicas]
    assert codes == [0, 0]
    for log in logs:
        assert "Traceback" not in log.read_text()


def test_a_lease_deleted_mid_pass_never_has_two_processes_write_one_bundle(tmp_path,
                                                                         emulator):
    """Two `gitgate run --shard` processes; an admin deletes one's Lease while its pass
    writes (the API server slowed, so the pass is long). From the API server's log: every
    bundle object is written by its owner under the assignment it acknowledged, and never
    under an older assignment after a newer one (no two replicas write one bundle at once)."""
    from gitgate.passes.replicas import lease_name

    upstream = Upstream(tmp_path)
    identities = sharing_identities(APPS)
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    replicas, ports, logs = start_replicas(tmp_path, upstream, kubeconfig, identities)
    cluster = KubeCluster(load_client(str(kubeconfig)))
    try:
        until(lambda: set(values(emulator).values()) == {"one"}, 60, "every bundle applied")
        until(lambda: all(acting(port) for port in ports), 30, "both replicas act")
        first = identities[0]
        mine = [app for app in APPS if owner(app, tuple(sorted(identities))) == first]
        shared_from = len(emulator.state.writes())  # (the first one up started alone)
        for value in ("two", "three"):
            emulator.state.stall = 0.15  # a slow API server: the pass writes for seconds
            seen = len(emulator.state.writes())
            upstream.set_value(tmp_path, value)
            until(lambda s=seen: any(writers(emulator, app, since=s) for app in mine), 30,
                  "the first replica's pass writes")
            cluster.delete(LEASE_API, "Lease", NAMESPACE, lease_name("default", first))
            # the slow server keeps the first replica's pass writing while the other could
            # act (its Lease thread looks every second); the check below is on the log only
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline and not any(
                    identities[1] in writers(emulator, app, since=seen) for app in mine):
                time.sleep(0.1)
            emulator.state.stall = 0.0
            until(lambda v=value: set(values(emulator).values()) == {v}, 60,
                  f"{value} applied everywhere")
        check_fencing(emulator.state.writes(), 0, None)
        # a Lease deleted under a live holder hands nothing over: each bundle has had one
        # writer since both shared them, its owner among the two
        both = tuple(sorted(identities))
        assert {app: writers(emulator, app, since=shared_from) for app in APPS} == {
            app: {owner(app, both)} for app in APPS}
    finally:
        emulator.state.stall = 0.0
        for process in replicas:
            process.terminate()
        codes = [process.wait(20) for process in replicas]
    assert codes == [0, 0]
    for log in logs:
        assert "Traceback" not in log.read_text()


def test_a_share_that_moved_during_the_pass_is_not_read_before_the_takeover(
        tmp_path, emulator, tools):
    """After a pass, each replica reads what Karmada did with its share. When a peer left
    during that pass, the share is about to grow: that read is left to the pass over the new
    share, so the takeover does not wait for it."""
    a, b = two_replicas(tmp_path, emulator, tools)
    turns(a, b)

    def bindings_read(since: int) -> int:
        return sum(1 for r in emulator.state.requests[since:] if r.method == "GET"
                   and r.path.endswith("/resourcebindings"))

    a.request_pass()  # a pass with its peer in place: Karmada is read after it
    assert a.turns.take() and a.tick() is not None
    since = len(emulator.state.requests)
    a.observer.after_tick(True)
    assert bindings_read(since) > 0 and a.state.observation is not None
    observed = set(a.state.observation.bundles)
    assert observed and not any(b.state.turn.owns(name) for name in observed)

    a.request_pass()
    assert a.turns.take() and a.tick() is not None
    leave(b.shards, a.shards)  # b leaves during a's pass
    a.clock.advance(seconds=31)  # and a read of all is due
    assert a.observer.status_due(a.clock())
    since = len(emulator.state.requests)
    a.observer.after_tick(True)
    assert bindings_read(since) == 0
    assert set(a.state.observation.bundles) == observed  # as before: not read for now
    assert a.state.unread == a.state.last_result.changed()  # owed to the next read

    assert a.turns.take() and a.tick() is not None  # the pass over the new share
    a.observer.after_tick(True)
    assert set(a.state.observation.bundles) == {"ns", *APPS}


@pytest.mark.parametrize("read_all_due", [True, False])
def test_a_read_of_karmada_stops_at_the_next_list_when_the_share_moves_under_it(
        tmp_path, emulator, tools, monkeypatch, read_all_due):
    """The Lease thread sees the peer leave while the replica reads what Karmada did after a
    pass: the read ends before its next list, the last observation stays (it is no read of
    all), and what the pass changed (or the read of all that was due) is read after the pass
    over the new share."""
    a, b = two_replicas(tmp_path, emulator, tools)
    turns(a, b)
    a.shards.look()  # a beat of a's Lease thread: it has seen the assignment a acts on
    a.request_pass()
    assert a.turns.take() and a.tick() is not None
    a.observer.after_tick(True)  # nothing moves: the whole read
    before, read_all = a.state.observation, a.state.observed_all
    assert before is not None and before.bundles and read_all is not None

    repo(tmp_path, "two")
    a.request_pass()
    assert a.turns.take() and a.tick() is not None
    changed = a.state.last_result.changed()
    assert changed and all(a.state.turn.owns(name) for name in changed)
    lists: list[str] = []
    listing = a.cluster.list_objects

    def peer_leaves_during_the_first_list(api_version, kind, namespace="", label_selector=""):
        if kind == "Lease":  # the replicas' own reads
            return listing(api_version, kind, namespace, label_selector)
        lists.append(kind)
        if len(lists) == 1:
            leave(b.shards, a.shards)
            a.shards.look()  # a's Lease thread sees it while the list is under way
        return listing(api_version, kind, namespace, label_selector)

    monkeypatch.setattr(a.cluster, "list_objects", peer_leaves_during_the_first_list)
    if read_all_due:
        a.clock.advance(seconds=31)  # the longest read there is
    assert a.observer.status_due(a.clock()) is read_all_due
    a.observer.after_tick(True)
    assert len(lists) == 1 and lists[0].endswith("ResourceBinding")
    assert a.state.observation is before and a.state.observed_all == read_all
    # owed to the next read: all of them, or the bundles the pass changed
    assert a.state.unread == (None if read_all_due else changed)

    assert a.turns.take() and a.state.turn.shards.members == ("a",)
    assert a.tick() is not None  # the pass over the new share
    a.observer.after_tick(True)
    assert len(lists) > 1 and a.state.observation is not before
    assert set(a.state.observation.bundles) == {"ns", *APPS}
    assert all(a.state.observation.bundles[name] is not before.bundles[name]
               for name in changed)  # read again, not kept from before the change
    assert a.state.unread == set()
    assert (a.state.observed_all > read_all) is read_all_due
