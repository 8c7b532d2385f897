"""A new bundle's write-ahead record is one request: its Bundle created holding the intent.
Where the installed CRD refuses or drops the field (an earlier gitgate's schema), the Bundle
and its status are written as before, so the intent is recorded either way; a bundle with a
record writes its status alone."""

from __future__ import annotations

from dataclasses import replace

from gitgate.apiserver.changeset import Applied
from gitgate.apply.inventory import NAMESPACE, Entry, Inventory
from gitgate.apply.ledger import Ledger, stored_of
from gitgate.apply.recordformat import API_VERSION, KIND, bundle_name, from_bundle
from gitgate.errors import KubeError
from gitgate.model import Manifest
from tests.support.memory_cluster import MemoryCluster

INTENT = Inventory("shop/web", (Entry("apps/v1", "Deployment", "shop", "web", ""),
                                Entry("v1", "Service", "shop", "web", "")),
                   revision="r1", digest="d1", verdict="pending")


class EarlierCrd(MemoryCluster):
    """An API server whose Bundle schema lacks `spec.intent`: it prunes the field."""

    def apply(self, obj: Manifest, **kwargs) -> Applied:
        if obj.get("kind") == KIND and "intent" in (obj.get("spec") or {}):
            obj = {**obj, "spec": {k: v for k, v in obj["spec"].items() if k != "intent"}}
        return super().apply(obj, **kwargs)


class StrictEarlierCrd(MemoryCluster):
    """The same, as kube-apiserver answers a server-side apply of it (observed on the Karmada
    harness): the whole request refused."""

    def apply(self, obj: Manifest, **kwargs) -> Applied:
        if obj.get("kind") == KIND and "intent" in (obj.get("spec") or {}):
            self.calls.append(("refused", "Bundle"))
            raise KubeError("apply Bundle.gitgate.io gitgate-system/shop.web failed (500 ): "
                            "failed to create typed patch object (gitgate-system/shop.web; "
                            "gitgate.io/v1alpha1, Kind=Bundle): .spec.intent: field not "
                            "declared in schema", status=500)
        return super().apply(obj, **kwargs)


def record(cluster: MemoryCluster) -> Inventory:
    return from_bundle(cluster.objects[(API_VERSION, KIND, NAMESPACE, bundle_name("shop/web"))])


def bundle_writes(cluster: MemoryCluster) -> list[str]:
    return [what for verb, what in cluster.calls if verb == "apply" and "Bundle" in what]


def test_a_new_bundles_intent_is_recorded_by_its_creation_alone():
    cluster = MemoryCluster()
    Ledger({}).write_ahead(cluster, INTENT)
    assert bundle_writes(cluster) == ["Bundle.gitgate.io gitgate-system/shop.web"]
    assert record(cluster).entries == INTENT.entries
    assert record(cluster).revision == "r1"


def test_where_the_crd_drops_the_intent_the_status_records_it():
    cluster = EarlierCrd()
    Ledger({}).write_ahead(cluster, INTENT)
    assert bundle_writes(cluster) == ["Bundle.gitgate.io gitgate-system/shop.web",
                                      "Bundle.gitgate.io gitgate-system/shop.web status"]
    assert record(cluster).entries == INTENT.entries


def test_where_the_crd_refuses_the_intent_the_bundle_and_its_status_record_it():
    cluster = StrictEarlierCrd()
    ledger = Ledger({})
    ledger.write_ahead(cluster, INTENT)
    assert bundle_writes(cluster) == ["Bundle.gitgate.io gitgate-system/shop.web",
                                      "Bundle.gitgate.io gitgate-system/shop.web status"]
    assert record(cluster).entries == INTENT.entries
    assert ledger.certain


def test_the_final_record_of_a_new_bundle_is_its_status_alone_and_is_what_is_read():
    cluster = MemoryCluster()
    ledger = Ledger({})
    ledger.write_ahead(cluster, INTENT)
    written = tuple(replace(e, hash="h") for e in INTENT.entries[:1])
    ledger.write(cluster, replace(INTENT, entries=written, verdict="applied"))
    assert bundle_writes(cluster)[1:] == ["Bundle.gitgate.io gitgate-system/shop.web status"]
    assert record(cluster).entries == written
    assert record(cluster).verdict == "applied"


def test_a_bundle_with_a_record_writes_its_intent_into_the_status():
    cluster = MemoryCluster()
    Ledger({}).write(cluster, replace(INTENT, entries=INTENT.entries[:1], verdict="applied"))
    known = {"shop/web": replace(record(cluster), generation=1)}
    cluster.calls.clear()
    Ledger(known, stored=stored_of(known)).write_ahead(cluster, INTENT)
    assert bundle_writes(cluster) == ["Bundle.gitgate.io gitgate-system/shop.web status"]
    assert record(cluster).entries == INTENT.entries


def test_a_bundle_the_pass_did_not_read_keeps_its_intent_in_the_status_it_would_be_read_from():
    """A Bundle already there with a status of objects, though this pass read none (written
    since its read): the creation's intent would not be what is read, so the status is."""
    cluster = MemoryCluster()
    Ledger({}).write(cluster, replace(INTENT, entries=INTENT.entries[:1], verdict="applied"))
    cluster.calls.clear()
    Ledger({}).write_ahead(cluster, INTENT)
    assert bundle_writes(cluster) == ["Bundle.gitgate.io gitgate-system/shop.web",
                                      "Bundle.gitgate.io gitgate-system/shop.web status"]
    assert record(cluster).entries == INTENT.entries
