"""A bundle's record as a Bundle object (issue 29, item 1), over plain data: everything the
inventory knows survives the spec and status it is written as; a shape gitgate did not write
reads as what holds most; conditions keep their transition times while their status stays;
the history keeps the last applies, once per revision and outcome."""

from __future__ import annotations

import pytest

from gitgate.apply.conditions import conditions_for, states
from gitgate.apply.inventory import HISTORY_LIMIT, Entry, Inventory, history_entry
from gitgate.apply.recordedreason import RecordedReason
from gitgate.apply.recordformat import (
    bundle_name,
    entry_of_id,
    from_bundle,
    holds_intent,
    to_bundle,
    to_bundle_status,
    to_new_bundle,
)
from gitgate.progression.record import Progression

T1, T2 = "2026-11-24T09:00:00Z", "2026-11-24T09:05:00Z"
KEPT = Inventory(
    "shop/web", (Entry("apps/v1", "Deployment", "shop", "web", "h1"),
                 Entry("v1", "Namespace", "", "shop", "h2")),
    revision="r3", digest="d3", verdict="held",
    reasons=(RecordedReason.of({"kind": "gate", "gate": "freeze", "reason": "INC-1"}),),
    message="Held: INC-1",
    since=T1, last_applied=T1, last_full_apply=T1, instance="blue", source="apps/web",
    labels=(("tier", "web"),), progression=Progression('{"wave": 1}', '{"step": 2}', ""),
    overrides_behind=("member2",), applied_revision="r2", applied_digest="d2",
    clusters_behind=(("member2", "r1"),),
    history=(history_entry("r2", "d2", T1, "applied", "loop"),))


def stored(inventory: Inventory, generation: int = 4, now: str = T2) -> dict:
    """The Bundle as the API server holds it after the two writes."""
    obj = to_bundle(inventory)
    obj["metadata"]["generation"] = generation
    obj["status"] = to_bundle_status(inventory, generation, now)["status"]
    return obj


def test_everything_the_inventory_knows_survives_its_bundle():
    again = from_bundle(stored(KEPT))
    for field in ("bundle", "entries", "revision", "digest", "verdict", "reasons", "message",
                  "since", "last_applied", "last_full_apply", "instance", "source", "labels",
                  "progression", "overrides_behind", "applied_revision", "applied_digest",
                  "clusters_behind", "history"):
        assert getattr(again, field) == getattr(KEPT, field), field
    assert again.generation == 4
    assert stored(KEPT)["metadata"]["name"] == "blue.shop.web" == bundle_name("shop/web",
                                                                              "blue")
    status = stored(KEPT)["status"]
    assert status["observedGeneration"] == 4 and status["revision"] == "r2"


WEB = (("app.kubernetes.io/name", "web"), ("app.kubernetes.io/part-of", "shop"))
FACTS = Inventory("shop/web", (
    Entry("apps/v1", "Deployment", "shop", "web", "h1", WEB, ("ConfigMap/web-config",)),
    Entry("v1", "ConfigMap", "shop", "web-config", "h2", WEB),
    Entry("v1", "Service", "shop", "web", "h3", (("app.kubernetes.io/name", "api"),)),
    Entry("v1", "Secret", "shop", "web-tls", "h4", ()),
    Entry("policy.karmada.io/v1alpha1", "OverridePolicy", "shop", "web", "h5", None, None,
          ("shop/db",))), revision="r3", digest="d3", verdict="apply", source="apps/web")


def test_each_distinct_label_set_is_written_once_and_every_entry_reads_its_own_back():
    status = stored(FACTS)["status"]
    assert status["labelSets"] == [dict(WEB), {"app.kubernetes.io/name": "api"}]
    assert [o.get("labels") for o in status["objects"]] == [0, 0, 1, {}, None]
    assert from_bundle(stored(FACTS)).entries == FACTS.entries
    assert "labelSets" not in stored(KEPT)["status"]  # nothing labelled: no sets


def test_an_entry_with_its_labels_as_a_map_or_an_index_out_of_range_reads_as_written():
    record = stored(FACTS)
    record["status"]["objects"][0]["labels"] = dict(WEB)  # as an earlier release wrote it
    record["status"]["objects"][1]["labels"] = 7  # no such set: unknown
    record["status"]["objects"][2]["labels"] = True  # another shape: unknown
    entries = from_bundle(record).entries
    assert [e.labels for e in entries[:3]] == [WEB, None, None]


PENDING = Inventory("shop/web", (Entry("apps/v1", "Deployment", "shop", "web", ""),
                                  Entry("v1", "ConfigMap", "shop", "web-config", "")),
                    revision="r4", digest="d4", verdict="pending", instance="blue",
                    source="apps/web", labels=(("tier", "web"),))


def created(inventory: Inventory) -> dict:
    """A new bundle's Bundle as the API server answers its one-request creation."""
    obj = to_new_bundle(inventory)
    obj["metadata"]["generation"] = 1
    return obj


def test_a_new_bundles_intent_is_read_from_its_creation_until_a_status_records_objects():
    pending = from_bundle(created(PENDING))
    assert pending.entries == PENDING.entries  # every object the pass may create, unhashed
    assert (pending.revision, pending.digest, pending.verdict, pending.applied_digest) == (
        "r4", "d4", "pending", "")
    assert holds_intent(created(PENDING), PENDING)
    # the loop's observer wrote what Karmada says of it: still the intent, and that too
    observed = created(PENDING)
    observed["status"] = {"lastHealthyRevision": "r3", "clustersReady": "0/2"}
    assert from_bundle(observed).entries == PENDING.entries
    assert from_bundle(observed).healthy_revision == "r3"
    # the pass's final record: its status is what is read, the intent left in the spec is not
    final = created(PENDING)
    final["status"] = to_bundle_status(KEPT, 1, T2)["status"]
    assert from_bundle(final).entries == KEPT.entries
    assert from_bundle(final).verdict == "held"
    assert not holds_intent(final, PENDING)


def test_a_creation_whose_intent_the_server_dropped_is_not_taken_for_a_record():
    pruned = created(PENDING)  # a CRD of an earlier gitgate: no `intent` in its schema
    del pruned["spec"]["intent"]
    assert not holds_intent(pruned, PENDING)
    assert from_bundle(pruned).entries == ()
    short = created(PENDING)
    short["spec"]["intent"]["ids"].pop()
    assert not holds_intent(short, PENDING)
    garbled = created(PENDING)  # an id that names no object is not taken for one
    garbled["spec"]["intent"]["ids"][0] = "ConfigMap/web-config"
    assert not holds_intent(garbled, PENDING)
    assert len(from_bundle(garbled).entries) == len(PENDING.entries) - 1


def test_a_new_bundles_intent_names_each_object_in_one_string():
    intent = created(PENDING)["spec"]["intent"]
    assert intent == {"revision": "r4", "ids": [
        "apps/v1/Deployment/shop/web", "v1/ConfigMap/shop/web-config"]}
    wider = Inventory("shop/web", (*PENDING.entries, Entry("v1", "Namespace", "", "shop", ""),
                                   Entry("rbac.authorization.k8s.io/v1", "ClusterRole", "",
                                         "web:read", "")), revision="r4", verdict="pending")
    obj = created(wider)
    assert obj["spec"]["intent"]["ids"][2:] == [
        "v1/Namespace//shop", "rbac.authorization.k8s.io/v1/ClusterRole//web:read"]
    assert from_bundle(obj).entries == wider.entries


@pytest.mark.parametrize("entry", [
    Entry("v1", "ConfigMap", "shop", "web/config", ""),  # not a Kubernetes name, but rendered
    Entry("example.com/v1/x", "Widget", "shop", "w", ""),
    Entry("v1", "Config/Map", "shop", "w", ""),
    Entry("v1", "ConfigMap", "sh/op", "w", ""),
    Entry("v1", "ConfigMap", "shop", "w", "a1b2"),  # hashed: not an intent's entry
])
def test_an_entry_one_string_cannot_tell_apart_goes_as_a_map_and_reads_back_the_same(entry):
    pending = Inventory("shop/web", (entry, Entry("v1", "Namespace", "", "shop", "")),
                        revision="r4", verdict="pending")
    obj = created(pending)
    assert "ids" not in obj["spec"]["intent"]
    assert from_bundle(obj).entries == pending.entries
    assert holds_intent(obj, pending)


def test_an_intent_an_earlier_release_wrote_as_maps_is_still_read():
    earlier = created(PENDING)
    earlier["spec"]["intent"] = {"revision": "r4", "objects": [
        e.as_dict() for e in PENDING.entries]}
    assert from_bundle(earlier).entries == PENDING.entries
    assert holds_intent(earlier, PENDING)


@pytest.mark.parametrize("text", [
    "ConfigMap/web", "v1/ConfigMap/shop", "a/b/c/ConfigMap/shop/web", "v1//shop/web",
    "v1/ConfigMap/shop/", "/ConfigMap/shop/web", 7, None, {"kind": "ConfigMap"},
])
def test_a_string_that_is_no_intent_id_names_no_object(text):
    assert entry_of_id(text) is None


@pytest.mark.parametrize(("field", "value", "check"), [
    ("clustersBehind", "member2", lambda i: i.cluster_revision("member1") == ""),
    ("overridesBehind", {"a": 1}, lambda i: i.overrides_behind == ("*",)),
    ("objects", "not a list", lambda i: i.entries == ()),
    ("objects", [{"kind": "ConfigMap"}, 7], lambda i: i.entries == ()),
    ("conditions", "Ready", lambda i: i.conditions == ()),
])
def test_a_shape_gitgate_did_not_write_reads_as_what_holds_most(field, value, check):
    obj = stored(KEPT)
    obj["status"][field] = value
    assert check(from_bundle(obj))


def test_a_retry_asked_by_resume_is_read_from_its_annotation():
    obj = stored(KEPT)
    obj["metadata"]["annotations"] = {"gitgate.io/retry-rollout": T2}
    assert from_bundle(obj).progression.retry == T2


@pytest.mark.parametrize(("verdict", "message", "ready", "true"), [
    ("apply", "Applied", ("True", "Applied"), set()),
    ("held", "Held: INC-1", ("False", "Held"), {"Held"}),
    ("suspended", "Applied", ("False", "Suspended"), {"Suspended"}),
    ("failed", "ApplyFailed: Deployment shop/web: forbidden", ("False", "ApplyFailed"),
     {"Stalled"}),
    ("halted", "Applied", ("False", "RolloutHalted"), {"Stalled"}),
    ("apply", "syncing: Job shop/migrate", ("False", "Progressing"),
     {"Progressing", "Reconciling"}),
])
def test_the_conditions_of_each_verdict(verdict, message, ready, true):
    said = states(Inventory("b", verdict=verdict, message=message))
    assert said["Ready"] == ready
    assert {k for k, (status, _) in said.items() if status == "True" and k != "Ready"} == true


def test_a_rollout_between_waves_is_progressing_not_stalled():
    said = states(Inventory("b", verdict="suspended"), rolling=True)
    assert said["Ready"] == ("False", "Progressing") and said["Progressing"][0] == "True"
    assert said["Stalled"][0] == "False"


def test_a_condition_keeps_its_transition_time_while_its_status_stays():
    first = conditions_for(Inventory("b", verdict="held", message="Held: x"), (), T1)
    later = conditions_for(Inventory("b", verdict="held", message="Held: y"), first, T2)
    assert {c["type"]: c["lastTransitionTime"] for c in later} == {
        c["type"]: T1 for c in first}
    lifted = {c["type"]: c for c in conditions_for(Inventory("b", verdict="apply"), later, T2)}
    assert lifted["Ready"]["lastTransitionTime"] == T2 and lifted["Ready"]["status"] == "True"
    assert lifted["Held"]["lastTransitionTime"] == T2 and lifted["Held"]["status"] == "False"
    assert lifted["Stalled"]["lastTransitionTime"] == T1  # False before and after


def test_the_history_is_bounded():
    many = tuple(history_entry(f"r{i}", f"d{i}", T1, "applied", "cli") for i in range(20))
    status = to_bundle_status(Inventory("b", history=many), 1, T1)["status"]
    assert [h["revision"] for h in status["history"]] == [
        f"r{i}" for i in range(20 - HISTORY_LIMIT, 20)]


def test_the_rollback_target_prefers_the_last_healthy_revision():
    from gitgate.gitops.workflow import rollback_target

    history = [history_entry(r, "d", T1, "applied", "loop") for r in ("r1", "r2", "r3")]
    assert rollback_target(history, "r3", healthy="r1") == "r1"  # r2 never was ready
    assert rollback_target(history, "r3", healthy="r3") == "r2"  # live is healthy: before it
    assert rollback_target(history, "r3") == "r2"
    failed = [*history, history_entry("r4", "d", T2, "failed: ApplyFailed", "loop")]
    assert rollback_target(failed, "r3") == "r2"
    with pytest.raises(Exception, match="--to"):
        rollback_target(history[:1], "r1")


def test_the_observer_keeps_the_last_healthy_revision_until_a_newer_one_is_ready():
    from gitgate.apply.recordformat import clusters_status
    from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version

    def member(name: str, ready: bool) -> ClusterState:
        return ClusterState(name, True, True, Health.HEALTHY if ready else Health.UNHEALTHY,
                            False, Version.CURRENT)

    live = Inventory("b", applied_revision="r2", healthy_revision="r1")
    both = clusters_status(live, Dispatch((member("m1", True), member("m2", True))))
    assert both["status"]["lastHealthyRevision"] == "r2"
    assert both["status"]["clustersReady"] == "2/2"
    one = clusters_status(live, Dispatch((member("m1", True), member("m2", False))))
    assert one["status"]["lastHealthyRevision"] == "r1"  # kept: r2 is not ready everywhere
    assert one["status"]["clustersReady"] == "1/2"
    behind = clusters_status(Inventory("b", applied_revision="r2", healthy_revision="r1",
                                       clusters_behind=(("m2", "r1"),)),
                             Dispatch((member("m1", True), member("m2", True))))
    assert behind["status"]["lastHealthyRevision"] == "r1"  # m2 still runs r1


@pytest.fixture
def keeping_records():
    """The records' cache `gitgate run` keeps (`RecordCache`); a one-shot command has none
    and reads once."""
    from gitgate.apply.recordcache import RecordCache

    return RecordCache()


class Records:
    """The Bundles an API server lists (a Lister over plain data)."""

    def __init__(self, found: list[dict]):
        self.found = found

    def list_objects(self, api_version, kind, namespace="", label_selector=""):
        return [dict(obj) for obj in self.found]


def test_a_record_the_server_did_not_change_is_not_parsed_again(keeping_records):
    from dataclasses import replace

    from gitgate.apply.ledger import read_inventories

    def at(inventory: Inventory, uid: str, version: str) -> dict:
        obj = stored(inventory)
        obj["metadata"] |= {"uid": uid, "resourceVersion": version}
        return obj

    other = replace(KEPT, bundle="shop/db", entries=KEPT.entries[:1])
    server = Records([at(KEPT, "u1", "10"), at(other, "u2", "11")])
    first = read_inventories(server, "blue", keeping_records)
    assert first["shop/web"].entries == KEPT.entries
    again = read_inventories(server, "blue", keeping_records)
    assert again["shop/web"] is first["shop/web"] and again["shop/db"] is first["shop/db"]
    moved = replace(KEPT, verdict="apply", entries=KEPT.entries[1:])
    server.found[0] = at(moved, "u1", "12")  # written since: a new resourceVersion
    changed = read_inventories(server, "blue", keeping_records)
    assert changed["shop/web"].verdict == "apply" and changed["shop/web"].entries == moved.entries
    assert changed["shop/db"] is first["shop/db"]
    server.found[1] = at(replace(other, verdict="failed"), "u3", "11")  # made again: new uid
    assert read_inventories(server, "blue", keeping_records)["shop/db"].verdict == "failed"
    unknown = stored(KEPT)  # a server that gives no resourceVersion: parsed every time
    server.found = [unknown]
    assert read_inventories(server, "blue", keeping_records)["shop/web"] is not read_inventories(
        server, "blue")["shop/web"]


class MetadataRecords(Records):
    """A server that lists metadata alone (PartialObjectMetadataList) and reads one record,
    counting what it was asked."""

    def __init__(self, found: list[dict]):
        super().__init__(found)
        self.reads: list[str] = []
        self.full_lists = 0

    def list_metadata(self, api_version, kind, namespace="", label_selector=""):
        return [{"apiVersion": api_version, "kind": kind, "metadata": dict(obj["metadata"])}
                for obj in self.found]

    def list_objects(self, api_version, kind, namespace="", label_selector=""):
        self.full_lists += 1
        return super().list_objects(api_version, kind, namespace, label_selector)

    def get(self, api_version, kind, namespace, name):
        self.reads.append(name)
        return next((dict(o) for o in self.found if o["metadata"]["name"] == name), None)


def test_only_the_records_that_changed_are_read_after_a_list_of_their_metadata(keeping_records):
    from dataclasses import replace

    from gitgate.apply.ledger import read_inventories
    from gitgate.apply.recordcache import ONE_BY_ONE
    from gitgate.apply.recordformat import bundle_name

    def record(index: int, version: str, verdict: str = "apply") -> dict:
        obj = stored(replace(KEPT, bundle=f"shop/b{index}", verdict=verdict))
        obj["metadata"] |= {"uid": f"u{index}", "resourceVersion": version}
        return obj

    count = 4 * ONE_BY_ONE + 8
    server = MetadataRecords([record(i, "1") for i in range(count)])
    # nothing kept: one list of the objects
    first = read_inventories(server, "blue", keeping_records)
    assert len(first) == count and server.full_lists == 1 and server.reads == []
    assert read_inventories(server, "blue", keeping_records)["shop/b3"] is first["shop/b3"]
    assert server.full_lists == 1 and server.reads == []  # unchanged: metadata alone

    server.found[3] = record(3, "2", verdict="failed")
    server.found[5] = record(5, "2", verdict="failed")
    again = read_inventories(server, "blue", keeping_records)
    assert sorted(server.reads) == sorted(
        bundle_name(f"shop/b{i}", "blue") for i in (3, 5)) and server.full_lists == 1
    assert again["shop/b3"].verdict == again["shop/b5"].verdict == "failed"
    assert again["shop/b4"] is first["shop/b4"]

    server.reads.clear()  # many changed: one list of the objects, not a read each
    server.found = [record(i, "3", verdict="hold") for i in range(count)]
    again = read_inventories(server, "blue", keeping_records)
    assert {inv.verdict for inv in again.values()} == {"hold"}
    assert server.full_lists == 2 and server.reads == []


def test_a_record_the_watch_sends_is_parsed_once_and_its_unchanged_objects_held_once(
        keeping_records, monkeypatch):
    """Another replica's write comes through the watch (and a write's answer and the watch's
    event of it are the same version): parsed once, taken by the next list that names that
    version, and when its objects are as they were, their list is the one already held."""
    from dataclasses import replace

    from gitgate.apply import ledger, recordcache

    def record(inventory: Inventory, version: str) -> dict:
        obj = stored(inventory)
        obj["metadata"] |= {"uid": "u0", "resourceVersion": version}
        return obj

    server = MetadataRecords([record(replace(KEPT, bundle="shop/b0"), "1")])
    first = ledger.read_inventories(server, "blue", keeping_records)
    server.reads.clear()
    parsed: list[str] = []
    parse = ledger.from_bundle
    monkeypatch.setattr(recordcache, "from_bundle", lambda obj: parsed.append(
        obj["metadata"]["resourceVersion"]) or parse(obj))

    status_only = record(replace(KEPT, bundle="shop/b0", verdict="failed"), "2")
    keeping_records.remember(status_only)
    keeping_records.remember(dict(status_only))  # the same version again: not parsed again
    server.found = [status_only]
    again = ledger.read_inventories(server, "blue", keeping_records)
    assert parsed == ["2"] and server.reads == [] and server.full_lists == 0
    assert again["shop/b0"].verdict == "failed"
    assert again["shop/b0"].entries is first["shop/b0"].entries

    moved = record(replace(KEPT, bundle="shop/b0", entries=KEPT.entries[1:]), "3")
    keeping_records.remember(moved)
    server.found = [moved]
    third = ledger.read_inventories(server, "blue", keeping_records)
    assert third["shop/b0"].entries == KEPT.entries[1:] and server.reads == []


def test_a_one_shot_command_reads_the_records_with_one_list_and_keeps_nothing():
    from dataclasses import replace

    from gitgate.apply.ledger import read_inventories

    found = stored(replace(KEPT, bundle="shop/b0"))
    found["metadata"] |= {"uid": "u0", "resourceVersion": "1"}
    server = MetadataRecords([found])
    first = read_inventories(server, "blue")
    assert server.full_lists == 1 and server.reads == []
    assert read_inventories(server, "blue")["shop/b0"] is not first["shop/b0"]
    assert server.full_lists == 2


def test_a_record_deleted_between_the_list_and_its_read_is_left_out(keeping_records):
    from dataclasses import replace

    from gitgate.apply.ledger import read_inventories

    def record(index: int, version: str) -> dict:
        obj = stored(replace(KEPT, bundle=f"shop/b{index}"))
        obj["metadata"] |= {"uid": f"u{index}", "resourceVersion": version}
        return obj

    server = MetadataRecords([record(0, "1"), record(1, "1")])
    read_inventories(server, "blue", keeping_records)
    listed = server.list_metadata("", "")
    gone = MetadataRecords([record(0, "1")])  # b1 deleted after its metadata was listed
    gone.list_metadata = lambda *args: listed[:1] + [{"metadata": {
        **listed[1]["metadata"], "resourceVersion": "2"}}]
    found = read_inventories(gone, "blue", keeping_records)
    assert set(found) == {"shop/b0"} and len(gone.reads) == 1


def test_a_record_goes_without_the_optional_fields_an_earlier_crd_refuses():
    from gitgate.apply.recordformat import without_undeclared
    bundle = {"apiVersion": "gitgate.io/v1alpha1", "kind": "Bundle",
              "metadata": {"name": "shop"},
              "spec": {"bundle": "shop", "digest": "d" * 64, "intent": {"objects": []}}}
    prefix = ("failed to create typed patch object (gitgate-system/shop; gitgate.io/v1alpha1, "
              "Kind=Bundle): ")
    one = without_undeclared(bundle, prefix + ".spec.digest: field not declared in schema")
    assert one is not None and one["spec"] == {"bundle": "shop", "intent": {"objects": []}}
    both = without_undeclared(bundle, prefix + "errors:\n  .spec.digest: field not declared "
                              "in schema\n  .spec.intent: field not declared in schema")
    assert both is not None and both["spec"] == {"bundle": "shop"}
    assert bundle["spec"]["digest"] == "d" * 64  # the caller's record is left as it was
    # a field the record cannot go without, or another refusal: nothing to retry
    assert without_undeclared(bundle, prefix + ".spec.bundle: field not declared in schema") \
        is None
    assert without_undeclared(bundle, "etcdserver: request timed out") is None
    assert without_undeclared({**bundle, "spec": {"bundle": "shop"}},
                              prefix + ".spec.digest: field not declared in schema") is None
