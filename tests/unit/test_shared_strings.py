"""What recurs across thousands of objects is held once: keys and short values of rendered
YAML, the kinds and namespaces of records, the group of every ref. Long strings (hashes,
contents) are kept as they are."""

from __future__ import annotations

import hashlib

import orjson

from gitgate.apply.inventory import Entry, Inventory
from gitgate.apply.recordformat import from_bundle, to_bundle, to_bundle_status
from gitgate.model import ObjectRef
from gitgate.model.shared import SHARED_MAX, shared, shared_tree
from gitgate.yamlio import load_documents

TEXT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec: {template: {spec: {containers: [{name: app, image: "nginx:1.25"}]}}}
"""


def test_equal_short_strings_become_one_and_long_ones_are_left_alone():
    a, b = "".join(["Config", "Map"]), "".join(["Conf", "igMap"])
    assert a is not b
    assert shared(a) is shared(b)
    long_a, long_b = "x" * (SHARED_MAX + 1), "".join(["x" * SHARED_MAX, "x"])
    assert shared(long_a) is long_a and shared(long_b) is long_b


def test_a_decoded_tree_keeps_its_values_and_shares_its_strings():
    first, second = orjson.loads(b'{"kind": "Service", "n": [1, "v1", null]}'), orjson.loads(
        b'{"kind": "Service", "n": [1, "v1", null]}')
    one, two = shared_tree(first), shared_tree(second)
    assert one == first == two
    assert one["kind"] is two["kind"] and one["n"][1] is two["n"][1]


def test_rendered_documents_share_their_keys_and_short_values():
    one = next(load_documents(TEXT)).data
    two = next(load_documents(TEXT)).data
    assert one == two
    key_one = next(k for k in one if k == "apiVersion")
    key_two = next(k for k in two if k == "apiVersion")
    assert key_one is key_two
    assert one["kind"] is two["kind"]
    assert one["metadata"]["namespace"] is two["metadata"]["namespace"]


def test_records_read_back_share_kinds_namespaces_and_revisions_but_not_hashes():
    revision = hashlib.sha1(b"head").hexdigest()

    def record(name: str) -> bytes:
        entries = tuple(Entry("v1", "ConfigMap", "shop", f"{name}-{k}",
                              hashlib.sha256(f"{name}{k}".encode()).hexdigest())
                        for k in range(3))
        inventory = Inventory(bundle=name, entries=entries, revision=revision,
                              applied_revision=revision, verdict="apply")
        body = to_bundle(inventory)
        body["status"] = to_bundle_status(inventory, 1, "2026-11-25T06:00:00Z")["status"]
        return orjson.dumps(body)

    one, two = from_bundle(orjson.loads(record("a"))), from_bundle(orjson.loads(record("b")))
    assert one.entries[0].kind is two.entries[0].kind
    assert one.entries[0].namespace is two.entries[2].namespace
    assert one.revision is two.revision and one.applied_revision is two.revision
    assert one.conditions[0]["type"] is two.conditions[0]["type"]
    again = from_bundle(orjson.loads(record("a")))
    assert again == one and again.entries[0].hash is not one.entries[0].hash


def test_refs_share_their_group():
    one = ObjectRef.of({"apiVersion": "".join(["apps", "/v1"]), "kind": "Deployment",
                        "metadata": {"name": "a"}})
    two = ObjectRef.of({"apiVersion": "".join(["app", "s/v1"]), "kind": "Deployment",
                        "metadata": {"name": "b"}})
    assert one.group == "apps" and one.group is two.group
