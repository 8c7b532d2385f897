"""The web page's pure parts with plain data: what the overview, gates, rollouts and bundle
pages say, the filters, escaping, and the last change's field paths (never a value, and no
key of a Secret)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from gitgate.apply.inventory import Entry, Inventory
from gitgate.apply.recordedreason import RecordedReason
from gitgate.bundle.group import bundle_digest
from gitgate.gate.evaluate import GateState
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.karmada.waves import RolloutState
from gitgate.model import ObjectRef, Verdict
from gitgate.model.gaterule import Action, Gate, Window
from gitgate.model.verdict import BundleVerdict
from gitgate.output.webgates import gates_page
from gitgate.output.weblayout import Filters, Snapshot
from gitgate.output.webpages import bundle_page, overview_page
from gitgate.output.webrollouts import rollouts_page
from gitgate.plan import BundlePlan, Plan
from gitgate.progression.record import Progression
from gitgate.status.overview import (
    LastChange,
    bounded,
    changed_fields,
    gate_view,
    last_changes,
)
from tests.support.objects import bundle, cm

NOW = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
CANARY = "c4n4ry-s3cret-value"


def member(name: str, *, ready: bool = True, suspended: bool = False,
           behind: bool = False) -> ClusterState:
    return ClusterState(name, True, True, Health.HEALTHY if ready else Health.UNHEALTHY,
                        suspended, Version.BEHIND if behind else Version.CURRENT)


def inventory(name: str, verdict: str = "apply", **kw) -> Inventory:
    return Inventory(bundle=name, verdict=verdict, revision="a" * 40, applied_revision="a" * 40,
                     digest="d1", applied_digest="d1", **kw)


def snapshot(*inventories: Inventory, dispatch=None, overview=None) -> Snapshot:
    return Snapshot(now=NOW, inventories=tuple(inventories), dispatch=dispatch or {},
                    overview=overview or {}, origin="file:///repo (main)", revision="a" * 40)


def rows(page: str) -> dict[str, str]:
    """data-bundle -> the row's HTML."""
    return dict(re.findall(r'<tr data-bundle="([^"]+)">(.*?)</tr>', page, re.S))


def test_the_overview_shows_each_bundle_with_its_verdict_and_each_member():
    snap = snapshot(
        inventory("shop/web", labels=(("team", "pay"),)),
        inventory("shop/api", "held", reasons=(RecordedReason.of(
            {"kind": "gate", "gate": "freeze", "file": "gates/f.yaml", "reason": "INC-7"}),)),
        dispatch={"shop/web": Dispatch((member("member1"), member("member2", ready=False))),
                  "shop/api": Dispatch((member("member1", suspended=True),))})
    page = overview_page(snap, Filters())
    found = rows(page)
    assert set(found) == {"shop/web", "shop/api"}
    assert 'data-verdict="apply"' in found["shop/web"]
    assert 'data-verdict="held"' in found["shop/api"]
    assert re.search(r'data-cluster="member1"[^>]*>✓ ready<', found["shop/web"])
    assert re.search(r'data-cluster="member2"[^>]*>✗ unhealthy<', found["shop/web"])
    assert re.search(r'data-cluster="member1"[^>]*>‖ suspended<', found["shop/api"])
    assert "1/2" in found["shop/web"]  # ready out of scheduled
    assert 'href="/ui/bundles/shop/web"' in found["shop/web"]
    assert ">held: 1</a>" in page and ">apply: 1</a>" in page


def test_filters_by_name_glob_or_part_label_and_verdict():
    snap = snapshot(inventory("shop/web", labels=(("team", "pay"),)),
                    inventory("shop/api", "held", labels=(("team", "core"),)),
                    inventory("infra/dns", labels=(("tier", "base"),)))
    assert set(rows(overview_page(snap, Filters(name="shop/*")))) == {"shop/web", "shop/api"}
    assert set(rows(overview_page(snap, Filters(name="dn")))) == {"infra/dns"}
    assert set(rows(overview_page(snap, Filters(label="team=pay")))) == {"shop/web"}
    assert set(rows(overview_page(snap, Filters(label="team")))) == {"shop/web", "shop/api"}
    assert set(rows(overview_page(snap, Filters(verdict="held")))) == {"shop/api"}
    none = overview_page(snap, Filters(name="nothing"))
    assert rows(none) == {} and "No bundle matches" in none
    assert Filters.of({"name": ["  shop  "], "verdict": ["held"]}) == Filters("shop", "",
                                                                             "held")


def test_a_failed_pass_shows_failed_over_the_recorded_verdict():
    snap = replace(snapshot(inventory("shop/web")), verdicts={"shop/web": "failed"})
    assert 'data-verdict="failed"' in rows(overview_page(snap, Filters()))["shop/web"]


def test_everything_from_the_repo_is_escaped():
    hostile = '<script>alert("x")</script>'
    inv = inventory("shop/web", verdict="held", message=hostile, reasons=(RecordedReason.of(
        {"kind": "gate", "gate": "g", "file": "gates/g.yaml", "reason": hostile}),))
    gate = {"name": "g", "file": "gates/g.yaml", "action": "hold", "reason": hostile,
            "owner": hostile, "active": True, "covers": ["shop/web"], "until": None,
            "nextChange": None, "windows": [], "clusters": []}
    snap = snapshot(inv, overview={"gates": [gate]})
    for page in (overview_page(snap, Filters(name=hostile)), gates_page(snap),
                 bundle_page(snap, inv, [{"type": "Normal", "reason": "Held", "note": hostile,
                                          "at": "2026-11-24T02:00:00Z"}])):
        assert "<script>alert" not in page
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_gates_active_upcoming_and_unusable_with_owner_and_what_they_cover():
    freeze = Gate("freeze", "gates/freeze.yaml", "INC-7 (Alice)", bundles=("shop/*",),
                  until=NOW + timedelta(hours=2), owner="team-payments")
    nightly = Gate("nightly", "gates/nightly.yaml", "no deploys at night", bundles=("*",),
                   windows=(Window("0 22 * * *", timedelta(hours=8)),))
    overview = {"gates": [gate_view(GateState(freeze, True, freeze.until, ("shop/web",))),
                          gate_view(GateState(nightly, False, NOW + timedelta(hours=19)))],
                "invalidGates": [{"file": "gates/bad.yaml", "line": 4, "within": [],
                                  "message": "spec.until is not a time"}]}
    page = gates_page(snapshot(inventory("shop/web"), overview=overview))
    active, upcoming = page.split("<h2>Upcoming</h2>")
    assert 'data-gate="freeze"' in active and "team-payments" in active
    assert "until <time" in active and ">in 2h</time>" in active
    assert 'href="/ui/bundles/shop/web"' in active
    assert 'data-gate="nightly"' in upcoming and "starts <time" in upcoming
    assert "0 22 * * * for 8h (UTC)" in upcoming
    assert "gates/bad.yaml:4" in page and "holds every bundle until fixed" in page


def test_without_an_overview_the_gates_are_those_the_records_name():
    inv = inventory("shop/web", "held", reasons=(
        RecordedReason("gate", "freeze", "gates/f.yaml", "INC-7"),
        RecordedReason("rollout", "rollout", "shop/bundle.yaml", "wave")))
    page = gates_page(snapshot(inv, inventory("shop/api", "held", reasons=inv.reasons[:1])))
    assert "recorded no overview" in page
    assert page.count('data-gate="freeze"') == 1 and 'data-gate="rollout"' not in page
    assert 'href="/ui/bundles/shop/api"' in page and 'href="/ui/bundles/shop/web"' in page


def test_a_rollout_shows_released_current_and_halted_waves():
    spec = {"waves": ["member1", "member2", "member3"], "bakeSeconds": 300,
            "deadlineSeconds": 600, "onFailure": "hold", "waitingFor": "wave 2"}
    going = RolloutState("d1", 1, NOW - timedelta(minutes=4))
    inv = inventory("shop/web", progression=Progression(rollout=going.to_json()))
    page = rollouts_page(snapshot(inv, overview={"rollouts": {"shop/web": spec}}))
    waves = dict(re.findall(r'<tr class="(w-\w+)" data-wave="(\d)"', page)[i][::-1]
                 for i in range(3))
    assert waves == {"1": "w-released", "2": "w-current", "3": "w-pending"}
    assert "deadline in 6m" in page and "Bake 5m, deadline 10m" in page

    halted = replace(going, halted="member2 not ready within progressDeadline 10m")
    inv = inventory("shop/web", "halted", progression=Progression(rollout=halted.to_json()))
    page = rollouts_page(snapshot(inv, overview={"rollouts": {"shop/web": spec}}))
    assert 'class="alert halted"' in page
    assert "halted: member2 not ready within progressDeadline 10m" in page

    baking = replace(going, healthy_since=NOW - timedelta(minutes=1))
    inv = inventory("shop/web", progression=Progression(rollout=baking.to_json()))
    page = rollouts_page(snapshot(inv, overview={"rollouts": {"shop/web": spec}}))
    assert "next wave in 4m" in page
    assert "No bundle has a rollout" in rollouts_page(snapshot(inventory("plain")))


def plan(revision: str, bundles: dict[str, list[dict]]) -> Plan:
    items = []
    for name, objects in bundles.items():
        made = replace(bundle(name, *objects), digest=bundle_digest(objects))
        items.append(BundlePlan(made, BundleVerdict(name, Verdict.APPLY, made.digest),
                                tuple(objects), ()))
    return Plan(revision, NOW, tuple(items), (), (), ())


def secret(value: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "ns"},
            "data": {"password": value}, "stringData": {"token-for-prod": value}}


def test_the_last_change_names_field_paths_never_values_nor_secret_keys():
    before = plan("r1", {"web": [cm("settings", data={"mode": "one"}), secret(CANARY)],
                         "api": [cm("api")]})
    after = plan("r2", {"web": [cm("settings", data={"mode": "two", "new": "x"}),
                                secret(CANARY + "2"), cm("extra")], "api": [cm("api")]})
    changes = last_changes(before, after, {})
    assert set(changes) == {"web"}  # api's digest did not move
    objects = {o["object"]: o for o in changes["web"]["objects"]}
    assert objects["ConfigMap ns/settings"]["fields"] == [".data.mode", ".data.new"]
    assert objects["Secret ns/db"]["fields"] == [".data", ".stringData"]
    assert objects["ConfigMap ns/extra"]["action"] == "created"
    assert changes["web"]["revision"] == "r2"
    assert CANARY not in str(changes) and "password" not in str(changes)
    assert "token-for-prod" not in str(changes)
    # the next pass without a change keeps it; a bundle that left Git is forgotten
    kept = last_changes(after, plan("r3", {"api": [cm("api")]}), changes)
    assert kept == {}
    again = last_changes(after, after, changes)
    assert again == changes
    # the page reads what the overview records through one record, the same both ways
    assert LastChange.from_document(changes["web"]).document() == changes["web"]


def test_changed_fields_of_a_secret_never_name_its_keys():
    ref = ObjectRef("", "Secret", "ns", "db")
    assert changed_fields(ref, secret("a"), secret("b")) == [".data", ".stringData"]
    relabelled = {**secret("a"), "metadata": {"name": "db", "namespace": "ns",
                                              "labels": {"x": "1"}}}
    assert changed_fields(ref, secret("a"), relabelled) == [".metadata.labels"]


def test_the_bundle_page_shows_objects_clusters_history_events_and_last_change():
    inv = inventory(
        "shop/web", entries=(Entry("v1", "Secret", "ns", "db", "h1"),
                             Entry("apps/v1", "Deployment", "ns", "web", "h2")),
        history=({"revision": "b" * 40, "digest": "d", "at": "2026-11-24T02:00:00Z",
                  "outcome": "applied", "by": "loop"},),
        clusters_behind=(("member2", "c" * 40),))
    change = {"revision": "b" * 40, "at": "2026-11-24T02:00:00Z", "objects": [
        {"object": "v1/Secret ns/db", "action": "changed", "fields": [".data"]}]}
    snap = snapshot(inv, dispatch={"shop/web": Dispatch((member("member1"),
                                                         member("member2", behind=True)))},
                    overview={"changes": {"shop/web": change}})
    page = bundle_page(snap, inv, [{"type": "Warning", "reason": "RolloutHalted",
                                    "note": "member2 not ready", "at": "2026-11-24T02:30:00Z"}])
    assert "Secret ns/db" in page and "Deployment.apps ns/web" in page
    assert re.search(r'<tr data-cluster="member2">.*?behind · @ccccccc', page, re.S)
    assert "RolloutHalted" in page and "member2 not ready" in page
    assert "<code>.data</code>" in page and "never values" in page
    assert ">applied<" in page and ">loop<" in page


def test_an_overview_too_large_for_a_configmap_leaves_out_changes_then_rollouts():
    doc = {"gates": [{"name": "g"}], "rollouts": {"r": "x" * 50},
           "changes": {"c": "y" * 100}}
    assert bounded(doc, limit=10_000) == doc
    assert bounded(doc, limit=150) == {**doc, "changes": {}, "changesLeftOut": True}
    smallest = bounded(doc, limit=60)
    assert smallest["rollouts"] == {} and smallest["gates"] == [{"name": "g"}]


def test_a_gate_view_counts_what_it_does_not_list():
    gate = Gate("wide", "gates/w.yaml", "all", action=Action.SUSPEND, bundles=("*",),
                clusters=("member1",))
    many = tuple(f"b{i}" for i in range(250))
    view = gate_view(GateState(gate, True, None, many))
    assert len(view["covers"]) == 200 and view["coversMore"] == 50
    assert view["clusters"] == ["member1"] and view["action"] == "suspend"


def test_a_rollout_shows_each_check_of_its_analysis_per_cluster():
    record = ('{"error-rate/member1": {"failures": 2, "measured": "2026-11-24T02:59:00Z", '
              '"ok": false, "note": "0.3 > 0.05"}, "error-rate/member2": {"failures": 0, '
              '"measured": "2026-11-24T02:59:00Z", "ok": true, "note": "<0.01>, passes"}}')
    halted = RolloutState("d1", 1, NOW - timedelta(minutes=4), analysis=record,
                          halted="analysis error-rate on member1 failed 2 time(s)")
    inv = inventory("shop/web", "halted", progression=Progression(rollout=halted.to_json()))
    page = rollouts_page(snapshot(inv, overview={"rollouts": {"shop/web": {
        "waves": ["member1", "member2"], "bakeSeconds": 60, "deadlineSeconds": 600}}}))
    shown = dict(re.findall(r'<tr class="(a-\w+)" data-check="([^"]+)"', page))
    assert {v: k for k, v in shown.items()} == {"error-rate/member1": "a-fail",
                                                "error-rate/member2": "a-pass"}
    assert "<td>0.3 &gt; 0.05</td>" in page and "&lt;0.01&gt;, passes" in page
