"""A sharded pass writes first what another replica waits for (`Plan.awaited`,
`passes.onepass.awaited_first`): the bundles another replica's bundles depend on, directly or
through this replica's own, so that replica need not wait for this whole pass. Pure parts with
plain data, and the plan of a real folder of raw YAML."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from gitgate.apply.inventory import Entry, Inventory
from gitgate.apply.work import ApplyOptions
from gitgate.model.shardmap import unit_of
from gitgate.passes.onepass import awaited_first, plan_checkout
from gitgate.plan import awaited_by
from tests.conftest import write_files

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
NEEDS = {"ns": (), "crds": ("ns",), "db": ("crds",), "web": ("db", "ns"), "batch": ("ns",),
         "loop-a": ("loop-b",), "loop-b": ("loop-a",)}


def test_what_bundles_elsewhere_wait_for_directly_or_through_this_passes_own():
    assert awaited_by(NEEDS, {"web"}, {"ns", "crds", "db", "batch"}) == {"ns", "crds", "db"}
    assert awaited_by(NEEDS, {"db"}, {"ns", "crds", "web"}) == {"crds", "ns"}
    # what it needs is itself elsewhere: not followed further through there
    assert awaited_by(NEEDS, {"web", "db"}, {"ns", "crds", "batch"}) == {"ns", "crds"}
    assert awaited_by(NEEDS, {"batch"}, {"web", "db"}) == frozenset()  # needs nothing here
    assert awaited_by(NEEDS, (), set(NEEDS)) == frozenset()
    assert awaited_by(NEEDS, {"loop-a"}, {"loop-b"}) == {"loop-b"}  # a cycle ends


def cm(name: str, namespace: str = "shop") -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: "
            f"{namespace}}}\ndata: {{v: '1'}}\n")


def override(name: str, target: str) -> str:
    return f"""\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {{name: {name}, namespace: shop}}
spec:
  resourceSelectors: [{{apiVersion: v1, kind: ConfigMap, name: {target}}}]
  overrideRules:
    - targetCluster: {{clusterNames: [member1]}}
      overriders: {{labelsOverrider: [{{operator: add, value: {{tier: blue}}}}]}}
"""


def repo(tmp_path, shared_extra: str = ""):
    files = {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
        "shared/bundle.yaml": "name: shared\n",
        "shared/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"
                          + shared_extra,
        "mine/bundle.yaml": "name: mine\ndependsOn: [shared]\n",
        "mine/cm.yaml": cm("mine"),
        "theirs/bundle.yaml": "name: theirs\ndependsOn: [shared]\n",
        "theirs/cm.yaml": cm("theirs")}
    return write_files(tmp_path / "repo", files)


def plan_for(root, mine: set[str]):
    return plan_checkout(root, None, NOW, revision="r1",
                         shard=lambda name: unit_of(name) in mine).plan


def test_a_sharded_plan_goes_out_in_two_parts_when_another_replica_waits(tmp_path):
    plan = plan_for(repo(tmp_path), {"shared", "mine"})
    assert plan.elsewhere == {"theirs"} and plan.awaited == {"shared"}
    first, rest = awaited_first(plan, ApplyOptions(now=NOW), {})
    assert first is not None
    assert [b.bundle.name for b in first.bundles] == ["shared"]
    assert first.elsewhere == {"theirs", "mine"}
    assert [b.bundle.name for b in rest.bundles] == ["mine"]
    assert rest.elsewhere == {"theirs", "shared"}
    assert not first.awaited and not rest.awaited


def test_a_plan_is_left_whole_when_cutting_it_would_gain_nothing_or_risk_an_order(tmp_path):
    options = ApplyOptions(now=NOW)
    whole = plan_for(repo(tmp_path), {"shared", "mine", "theirs"})
    assert not whole.awaited and awaited_first(whole, options, {}) == (None, whole)
    only = plan_for(repo(tmp_path), {"shared"})  # what is awaited is all this replica has
    assert only.awaited == {"shared"} and awaited_first(only, options, {}) == (None, only)
    plan = plan_for(repo(tmp_path), {"shared", "mine"})
    assert awaited_first(plan, replace(options, dry_run=True), {}) == (None, plan)
    # an override of `shared` acting on `mine`: it waits for mine's suspension, so one part
    acting = plan_for(repo(tmp_path / "acting", "---\n" + override("blue", "mine")),
                      {"shared", "mine"})
    assert acting.awaited == {"shared"}
    assert any("mine" in targets for item in acting.bundles if item.bundle.name == "shared"
               for _, targets in item.bundle.acts_on)
    assert awaited_first(acting, options, {}) == (None, acting)
    # `shared` has an object to prune: the brake must weigh the whole pass's prunes at once
    left = Inventory("shared", (Entry("v1", "Namespace", "", "old", "h"),), revision="r0",
                     digest="d0", verdict="apply")
    assert awaited_first(plan, options, {"shared": left}) == (None, plan)
    kept = Inventory("mine", (Entry("v1", "ConfigMap", "shop", "old", "h"),), revision="r0",
                     digest="d0", verdict="apply")  # the rest may prune: weighed whole there
    assert awaited_first(plan, options, {"mine": kept})[0] is not None


def test_outside_a_shard_nothing_is_awaited(tmp_path):
    plan = plan_checkout(repo(tmp_path), None, NOW, revision="r1", bundle_glob="mine").plan
    assert plan.elsewhere == {"shared", "theirs"} and not plan.awaited
