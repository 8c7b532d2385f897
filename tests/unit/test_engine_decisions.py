"""The engine's decisions over an in-memory cluster: the order of writes across stages and
bundles, `dependsOn` cycles and unknown names, a failed dependency, the mass-prune brake and a
held bundle. Plain data in, the calls the engine made out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from gitgate.apply.work import ApplyOptions
from gitgate.errors import Reason
from gitgate.model import BundleOptions, RenderedSource, Source, SourceKind
from gitgate.plan import Plan, make_plan
from tests.support.engine import run_pass
from tests.support.memory_cluster import MemoryCluster
from tests.support.objects import cm, deployment

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
OPTIONS = ApplyOptions(now=NOW)


PLACEMENT = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}


def source(name: str, *objects: dict, depends_on: tuple[str, ...] = (),
           placement: dict | None = None) -> RenderedSource:
    options = BundleOptions(namespace="ns", depends_on=depends_on, placement=placement)
    return RenderedSource(Source(f"apps/{name}", SourceKind.RAW, options, name), objects)


def plan_of(*sources: RenderedSource, gates: dict[str, str | None] | None = None) -> Plan:
    return make_plan(tuple(sources), gates or {}, NOW, "rev1")


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def crd(name: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name}, "spec": {}}


def cluster_role(name: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": []}


def kinds(writes: list[str]) -> list[str]:
    return [w.split(" ")[0] for w in writes]


def results(plan: Plan, cluster: MemoryCluster, options: ApplyOptions = OPTIONS) -> dict:
    return {b.bundle: b for b in run_pass(plan, cluster, options).bundles}


def test_writes_go_stage_by_stage_across_bundles():
    cluster = MemoryCluster()
    plan = plan_of(
        source("a", deployment("web", configmaps=["conf"]), cm("conf"), namespace("ns"),
               placement=PLACEMENT),
        source("b", cluster_role("reader"), crd("widgets.example.com"), cm("other"),
               placement=PLACEMENT))
    results(plan, cluster)
    order = kinds(cluster.writes())
    # A first write: Namespaces and CRDs (of every bundle) first, then the bundles' own
    # policies (Karmada claims each template as it arrives), then cluster-scoped objects,
    # then namespaced templates.
    policies = {"PropagationPolicy.policy.karmada.io",
                "ClusterPropagationPolicy.policy.karmada.io"}
    assert set(order[:2]) == {"Namespace", "CustomResourceDefinition.apiextensions.k8s.io"}
    role = order.index("ClusterRole.rbac.authorization.k8s.io")
    assert set(order[2:role]) == policies and len(order[2:role]) == 4  # both bundles'
    assert set(order[role + 1:]) == {"ConfigMap", "Deployment.apps"}
    # once recorded, every bundle's templates go before any of its policies (a changed
    # placement never sends the templates it is about to replace)
    moved = {"clusterAffinity": {"clusterNames": ["member2"]}}
    changed = plan_of(
        source("a", deployment("web", configmaps=["conf"]), cm("conf", data={"v": "2"}),
               namespace("ns"), placement=moved),
        source("b", cluster_role("reader"), crd("widgets.example.com"),
               cm("other", data={"v": "2"}), placement=moved))
    cluster.calls.clear()
    assert all(not r.failed for r in results(changed, cluster).values())
    order = kinds(cluster.writes())
    first_policy = next(i for i, k in enumerate(order) if k.endswith("karmada.io"))
    assert set(order[:first_policy]) == {"ConfigMap"} and set(order[first_policy:]) == policies


def test_a_dependency_cycle_fails_its_bundles_and_writes_none_of_them():
    cluster = MemoryCluster()
    plan = plan_of(source("a", cm("a"), depends_on=("b",)), source("b", cm("b"), depends_on=("a",)),
                   source("c", cm("c")))
    got = results(plan, cluster)
    for name in ("a", "b"):
        assert got[name].failed and got[name].reason is Reason.DEPENDENCY_NOT_READY
        assert "cycle" in got[name].message
    assert not got["c"].failed
    assert [w for w in cluster.writes() if w.startswith("ConfigMap")] == ["ConfigMap ns/c"]


def test_an_unknown_dependency_is_named_and_its_bundle_not_written():
    cluster = MemoryCluster()
    got = results(plan_of(source("a", cm("a"), depends_on=("nope",))), cluster)
    assert got["a"].failed and got["a"].reason is Reason.DEPENDENCY_NOT_READY
    assert "nope" in got["a"].message
    assert cluster.writes() == []


def test_a_failed_dependency_stops_what_depends_on_it_and_dependents_come_after():
    cluster = MemoryCluster(refuse=("db",))
    plan = plan_of(source("web", cm("web"), depends_on=("store",)), source("store", cm("db")),
                   source("ok", cm("fine")))
    got = results(plan, cluster)
    assert got["store"].failed and "refused" in got["store"].message
    assert got["web"].reason is Reason.DEPENDENCY_NOT_READY and "store" in got["web"].message
    assert "ConfigMap ns/web" not in cluster.writes()
    assert "ConfigMap ns/fine" in cluster.writes()

    cluster = MemoryCluster()
    results(plan, cluster)
    configmaps = [w for w in cluster.writes() if w.startswith("ConfigMap")]
    assert configmaps.index("ConfigMap ns/db") < configmaps.index("ConfigMap ns/web")


def test_a_held_dependency_that_never_went_out_keeps_what_depends_on_it_waiting():
    gate = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
            "spec: {bundles: [store], reason: INC-1}\n")
    web, store = source("web", cm("web"), depends_on=("store",)), source("store", cm("db"))
    cluster = MemoryCluster()
    got = results(plan_of(web, store, gates={"gates/freeze.yaml": gate}), cluster)
    assert got["store"].reason is Reason.HELD and not got["store"].failed
    assert got["web"].failed and got["web"].reason is Reason.DEPENDENCY_NOT_READY
    assert "store" in got["web"].message and "ConfigMap ns/web" not in cluster.writes()

    cluster = MemoryCluster()  # once it went out, holding it stops nothing that depends on it
    results(plan_of(web, store), cluster)
    got = results(plan_of(source("web", cm("web", data={"v": "2"}), depends_on=("store",)),
                          store, gates={"gates/freeze.yaml": gate}), cluster)
    assert got["store"].reason is Reason.HELD and not got["web"].failed


def test_mass_prune_is_blocked_until_allowed():
    cluster = MemoryCluster()
    many = [cm(f"c{i}") for i in range(6)]
    results(plan_of(source("a", *many)), cluster)
    smaller = plan_of(source("a", *many[:2]))

    blocked = run_pass(smaller, cluster, OPTIONS)
    assert blocked.prune_blocked and not blocked.ok
    assert blocked.bundles[0].reason is Reason.PRUNE_BLOCKED
    assert cluster.writes("delete") == []

    allowed = run_pass(smaller, cluster, ApplyOptions(now=NOW, allow_mass_prune=True))
    assert allowed.ok
    assert sorted(cluster.writes("delete")) == [f"ConfigMap ns/c{i}" for i in range(2, 6)]


def test_a_small_prune_goes_ahead():
    cluster = MemoryCluster()
    many = [cm(f"c{i}") for i in range(6)]
    results(plan_of(source("a", *many)), cluster)
    result = run_pass(plan_of(source("a", *many[:5])), cluster, OPTIONS)
    assert result.ok and cluster.writes("delete") == ["ConfigMap ns/c5"]


def test_a_held_bundle_receives_no_write_and_others_go_on():
    gate = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
            "spec: {bundles: [a], reason: INC-1}\n")
    cluster = MemoryCluster()
    got = results(plan_of(source("a", cm("a")), source("b", cm("b")),
                          gates={"gates/freeze.yaml": gate}), cluster)
    assert got["a"].reason is Reason.HELD and not got["a"].failed
    assert not any("ns/a" in w or "gitgate-a" in w for w in cluster.writes())
    assert "ConfigMap ns/b" in cluster.writes()


def test_an_unreadable_gate_holds_everything():
    cluster = MemoryCluster()
    got = results(plan_of(source("a", cm("a")), gates={"gates/x.yaml": None}), cluster)
    assert got["a"].reason is Reason.HELD
    assert cluster.writes() == []


def test_nothing_changed_writes_nothing():
    cluster = MemoryCluster()
    plan = plan_of(source("a", cm("a"), deployment("web")))
    results(plan, cluster)
    cluster.calls.clear()
    again = run_pass(plan, cluster, OPTIONS)
    assert again.ok and cluster.writes() == [] and again.bundles[0].applied == []
    assert again.bundles[0].unchanged == len(plan.bundles[0].desired) + len(
        plan.bundles[0].policies)


def test_concurrent_writes_keep_stages_depends_on_and_object_order():
    cluster = MemoryCluster(refuse=("c-5",), latency=0.002)
    plan = plan_of(
        source("ns", namespace("ns")),
        source("a", *[cm(f"a-{i}") for i in range(10)], depends_on=("ns",)),
        source("b", *[cm(f"b-{i}") for i in range(10)], depends_on=("a",)),
        source("c", *[cm(f"c-{i}") for i in range(10)], depends_on=("ns",)))
    got = results(plan, cluster, ApplyOptions(now=NOW, concurrency=8))
    writes = cluster.writes()
    assert writes[0] == "Namespace ns"  # the namespaces stage before any ConfigMap
    position = {w: i for i, w in enumerate(writes)}
    assert max(position[f"ConfigMap ns/a-{i}"] for i in range(10)) < min(
        position[f"ConfigMap ns/b-{i}"] for i in range(10))  # b waits for what it dependsOn
    # c needs only ns: it goes out with a, not after b
    assert max(p for w, p in position.items() if w.startswith("ConfigMap ns/c-")) < min(
        position[f"ConfigMap ns/b-{i}"] for i in range(10))
    # results are in the objects' order whatever the timing; a failure names its object
    assert [str(r) for r in got["b"].applied] == [f"ConfigMap ns/b-{i}" for i in range(10)]
    assert got["c"].failed and "c-5" in got["c"].message
    assert not got["a"].failed and not got["b"].failed


def test_the_prune_decision_is_pure_over_plan_and_inventories():
    """What left Git, which bundles left Git and which of those a gate holds, and the
    brake, decided from data alone (the engine and `plan --kubeconfig` both follow it)."""
    from gitgate.apply import prunedecision
    from gitgate.apply.inventory import Entry, Inventory
    entry = lambda name: Entry("v1", "ConfigMap", "ns", name, "h")  # noqa: E731
    inventories = {"web": Inventory("web", (entry("a"), entry("b"))),
                   "old": Inventory("old", (entry("c"),), labels=(("tier", "x"),)),
                   "big": Inventory("big", tuple(entry(f"k{i}") for i in range(10)))}
    plan = plan_of(source("web", cm("a")), source("big", *(cm(f"k{i}") for i in range(10))))
    decision = prunedecision.decide(plan, inventories, {"web": (entry("b"),), "big": ()})
    assert decision.leftovers == {"web": (entry("b"),)}
    assert set(decision.gone) == {"old"} and not decision.gone["old"].held
    assert (decision.prunes, decision.managed, decision.blocked) == (2, 13, False)
    held = plan_of(source("web", cm("a")), source("big", *(cm(f"k{i}") for i in range(10))),
                   gates={"gates/h.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                          "metadata: {name: h}\nspec: {selector: {matchLabels: {tier: x}},"
                          " action: hold, reason: keep}\n"})
    decision = prunedecision.decide(held, inventories, {"web": (entry("b"),)})
    assert decision.gone["old"].held and decision.gone["old"].holds[0].reason == "keep"
    # outside `--bundle`'s scope nothing is taken for gone
    assert prunedecision.decide(plan, inventories, {}, scope=lambda n: n == "web").gone == {}
    # the brake: more than half of what is managed
    everything = {"web": (entry("a"), entry("b")), "big": inventories["big"].entries}
    assert prunedecision.decide(plan, inventories, everything).blocked
    assert not prunedecision.decide(plan, inventories, everything, allow_mass_prune=True).blocked


def test_the_record_of_a_change_goes_before_the_records_that_only_follow_the_revision():
    cluster = MemoryCluster()
    options = ApplyOptions(now=NOW, concurrency=1)  # one write at a time: the order shows
    sources = [source(name, cm(f"{name}-conf")) for name in ("a", "b", "c", "d")]
    run_pass(make_plan(tuple(sources), {}, NOW, "rev1"), cluster, options)
    cluster.calls.clear()
    sources[2] = source("c", cm("c-conf", data={"v": "2"}))  # the commit changes c alone
    passed = run_pass(make_plan(tuple(sources), {}, NOW, "rev2"), cluster, options)
    assert [b.bundle for b in passed.bundles if b.applied] == ["c"]
    statuses = [what.split("/")[1].removesuffix(" status") for verb, what in cluster.calls
                if verb == "apply" and what.startswith("Bundle.gitgate.io gitgate-system/")
                and what.endswith(" status")]
    assert statuses == ["c", "a", "b", "d"]  # every record follows rev2, c's first


def record_writes(cluster: MemoryCluster) -> list[str]:
    return [what.split("/")[1].removesuffix(" status") for verb, what in cluster.calls
            if verb == "apply" and what.startswith("Bundle.gitgate.io gitgate-system/")
            and what.endswith(" status")]


def test_once_the_share_moves_the_records_that_only_follow_the_revision_wait_for_the_next_pass():
    cluster = MemoryCluster()
    options = ApplyOptions(now=NOW, concurrency=1)
    sources = [source(name, cm(f"{name}-conf")) for name in ("a", "b", "c", "d")]
    run_pass(make_plan(tuple(sources), {}, NOW, "rev1"), cluster, options)
    cluster.calls.clear()
    sources[2] = source("c", cm("c-conf", data={"v": "2"}))  # the commit changes c alone
    plan = make_plan(tuple(sources), {}, NOW, "rev2")
    moved = replace(options, share_moved=lambda: "a" in record_writes(cluster))
    passed = run_pass(plan, cluster, moved, keep_inventories=True)
    assert record_writes(cluster) == ["c", "a"]  # the change's record always goes
    assert passed.inventories_written == 2
    assert {n: i.revision for n, i in passed.inventories.items()} == {
        "a": "rev2", "b": "rev1", "c": "rev2", "d": "rev1"}  # as the cluster holds them

    cluster.calls.clear()  # the next pass (over the new share) writes what was left
    again = run_pass(plan, cluster, options)
    assert record_writes(cluster) == ["b", "d"] and again.inventories_written == 2
    assert not any(verb == "apply" and "ConfigMap" in what for verb, what in cluster.calls)
