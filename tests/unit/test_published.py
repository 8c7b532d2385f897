"""`status.published.Published` built from plain data (no loop): `/status` and the web page
render from it alone, and the page's source takes a leading loop's turn, or the recorded
state when the replica stands by or plans a share."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from gitgate.apply.inventory import Inventory
from gitgate.apply.work import BundleResult, PassResult
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.model.shardmap import ShardMap
from gitgate.output.statusviews import loop_document
from gitgate.output.weblayout import Filters, Snapshot
from gitgate.output.webpages import overview_page
from gitgate.output.webui import loop_source, published_snapshot
from gitgate.passes.shards import Turn
from gitgate.status.published import Published
from tests.support.schemas import validate

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
REV = "b" * 40


def record(name: str, verdict: str = "apply") -> Inventory:
    return Inventory(bundle=name, verdict=verdict, revision=REV, applied_revision=REV,
                     digest="d1", applied_digest="d1")


def seen(**kw) -> Published:
    healthy = ClusterState("member1", True, True, Health.HEALTHY, False, Version.CURRENT)
    sick = ClusterState("member2", True, True, Health.UNHEALTHY, False, Version.CURRENT)
    base = Published(
        repo="https://git.example/shop.git", branch="main", at=NOW, leading=True, ready=True,
        passes=3, git_reachable=True, api_reachable=True, revision=REV,
        last_pass=NOW - timedelta(seconds=30), last_reason="revision",
        last_error="PassFailed: shop/api: ApplyFailed: denied",
        observed=True, last_observed=NOW - timedelta(seconds=20),
        observe_error="karmada: the bindings of shop cannot be listed",
        last_result=PassResult(REV, [BundleResult("shop/web", "apply"),
                                     BundleResult("shop/api", "apply", "ApplyFailed",
                                                  "denied", failed=True)]),
        dispatch=MappingProxyType({"shop/web": Dispatch((healthy, sick)),
                                   "shop/gone": Dispatch((healthy,))}),
        inventories=MappingProxyType({"shop/web": record("shop/web"),
                                      "shop/api": record("shop/api")}))
    return replace(base, **kw)


def test_status_renders_the_published_turn_alone():
    doc = loop_document(seen())
    validate(doc, "LoopStatus")
    assert (doc["repo"], doc["branch"], doc["passes"], doc["ready"]) == (
        "https://git.example/shop.git", "main", 3, True)
    assert doc["lastPass"] == "2026-11-29T11:59:30Z"
    assert doc["observeError"].startswith("karmada:")
    assert [b["name"] for b in doc["pass"]["bundles"]] == ["shop/web", "shop/api"]
    assert doc["pass"]["ok"] is False
    bundles = {b["name"]: b for b in doc["bundles"]}
    assert set(bundles) == {"shop/web", "shop/gone"}  # what Karmada reports
    assert [c["name"] for c in bundles["shop/web"]["clusters"]] == ["member1", "member2"]
    assert "shard" not in doc and "leaseProblem" not in doc


def test_status_before_the_first_turn_and_with_a_share():
    empty = loop_document(Published(repo="r", branch="main"))
    validate(empty, "LoopStatus")
    assert empty["passes"] == 0 and "bundles" not in empty and "pass" not in empty
    turn = Turn(ShardMap.of(["a", "b"]), "a", term=1, live=("a", "b"))
    doc = loop_document(seen(turn=turn, lease_problem="the Lease cannot be read"))
    validate(doc, "LoopStatus")
    assert doc["shard"]["members"] == ["a", "b"] and doc["shard"]["acting"] is True
    assert doc["leaseProblem"] == "the Lease cannot be read"
    assert {b["name"]: b.get("shard") for b in doc["bundles"]}["shop/web"] in ("a", "b")


def test_the_page_renders_the_published_turn_alone():
    snap = published_snapshot(seen(), NOW, 7)
    assert snap.origin == "https://git.example/shop.git (main)"
    assert snap.refresh_seconds == 7 and snap.now == NOW
    assert snap.problems == ("last pass: PassFailed: shop/api: ApplyFailed: denied",
                             "karmada: the bindings of shop cannot be listed")
    page = overview_page(snap, Filters())
    rows = dict(re.findall(r'<tr data-bundle="([^"]+)">(.*?)</tr>', page, re.S))
    assert set(rows) == {"shop/web", "shop/api"}
    assert 'data-verdict="failed"' in rows["shop/api"]  # the pass failed it
    assert 'data-verdict="apply"' in rows["shop/web"]
    assert re.search(r'data-cluster="member2"[^>]*>✗ unhealthy<', rows["shop/web"])
    assert "ApplyFailed: denied" in page


class Recorded:
    """Stands in for the records on the API server (`ApiSource`)."""

    def __init__(self) -> None:
        self.reads = 0

    def clock(self) -> datetime:
        return NOW

    def snapshot(self) -> Snapshot:
        self.reads += 1
        return Snapshot(now=NOW, inventories=(record("shop/other", "held"),), dispatch={},
                        overview={}, origin="")

    def events(self, record: Inventory) -> list[dict]:
        return [{"reason": "Applied", "bundle": record.bundle}]


def test_the_page_source_takes_the_turn_or_the_records():
    recorded = Recorded()
    turns = iter([seen(), seen(leading=False), seen(sharded=True)])
    source = loop_source(lambda: next(turns), recorded, 5)  # type: ignore[arg-type]
    leading = source.snapshot()
    assert [i.bundle for i in leading.inventories] == ["shop/web", "shop/api"]
    assert recorded.reads == 0  # the leader asks no one
    standby = source.snapshot()
    assert [i.bundle for i in standby.inventories] == ["shop/other"]
    assert standby.origin.endswith("this replica stands by, so this is what the leader "
                                   "recorded")
    share = source.snapshot()
    assert share.origin.endswith("what every replica recorded (--shard)")
    assert recorded.reads == 2
    assert source.events(record("shop/web")) == [{"reason": "Applied", "bundle": "shop/web"}]
