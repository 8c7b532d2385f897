"""A pass reads the cluster once: gitgate's inventories with one list (suspend-first hands its
read on), Karmada's bindings of a namespace with one list whether a rollout, a sync with
hooks or both need them, the member clusters once; and the loop shows status from what the
pass left, without reading the inventories again. Counted on an in-memory cluster that
records every call."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gitgate.apply.work import ApplyOptions
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.passes.onepass import reconcile
from gitgate.source.localgit import LocalCheckout
from tests.conftest import write_files
from tests.support.manifests import cm, deployment, pre_sync_job
from tests.support.memory_cluster import MemoryCluster

pytestmark = pytest.mark.integration
NOW = datetime(2026, 11, 24, 9, tzinfo=UTC)
PLACED = "defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 1m, "
           "progressDeadline: 10m}\n")
SUSPEND = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: other}\n"
           "spec: {bundles: [other], action: suspend, reason: INC-1 blue/green}\n")


def repo(tmp_path):
    return write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACED,
        "web/bundle.yaml": "name: web\nnamespace: shop\n" + ROLLOUT,
        "web/app.yaml": deployment("web", "shop") + cm("web-config", "shop"),
        "api/bundle.yaml": "name: api\nnamespace: shop\n",
        "api/app.yaml": deployment("api", "shop") + cm("api-config", "shop")
        + pre_sync_job("shop"),
        "other/bundle.yaml": "name: other\nnamespace: shop\n",
        "other/app.yaml": cm("other-config", "shop"),
        "gates/other.yaml": SUSPEND,
    })


INVENTORIES = "Bundle gitgate-system"


def lists(cluster: MemoryCluster, kind: str) -> list[str]:
    return [what for verb, what in cluster.calls if verb == "list" and what.split()[0] == kind]


def inventory_reads(cluster: MemoryCluster) -> int:
    return lists(cluster, "Bundle").count(INVENTORIES)


def test_a_pass_reads_inventories_bindings_and_members_once(tmp_path):
    root, cluster = repo(tmp_path), MemoryCluster()
    for minute in range(3):  # a first pass, then passes that find inventories, states
        cluster.calls.clear()
        done = reconcile(root, None, cluster, ApplyOptions(now=NOW + timedelta(minutes=minute)))
        assert done.result is not None and done.result.ok, [
            (b.bundle, b.message) for b in done.result.bundles]
        assert inventory_reads(cluster) == 1
        assert lists(cluster, "Cluster") == ["Cluster "]
        # gitgate's namespace and the Bundle type: made sure of once a pass, not per step
        home = ("Namespace gitgate-system", "CustomResourceDefinition bundles.gitgate.io")
        assert [w for v, w in cluster.calls if v == "get" and w in home] in ([], list(home))
        if minute:  # the rollout of web and the sync of api both need shop's bindings
            assert lists(cluster, "ResourceBinding") == ["ResourceBinding shop"]
    hooks = next(b for b in done.plan.bundles if b.bundle.name == "api").hooks
    rollout = next(b for b in done.plan.bundles if b.bundle.name == "web").rollout
    assert hooks is not None and rollout is not None  # both were decided on the one read


def test_the_loop_shows_status_from_the_pass_without_reading_inventories_again(tmp_path, tools):
    root, cluster = repo(tmp_path), MemoryCluster()
    loop = Reconciler(LocalCheckout(root), cluster, tools,
                      LoopSettings(apply=ApplyOptions(now=NOW)), clock=lambda: NOW)
    passes = 0

    def settled() -> bool:
        nonlocal passes
        passes += 1
        return True

    loop.run(until=settled)
    assert passes == 1 and loop.state.last_result is not None and loop.state.last_result.ok
    assert inventory_reads(cluster) == 1
    observed = loop.state.observation
    assert observed is not None and set(observed.bundles) == {"web", "api", "other"}


def test_after_a_failed_inventory_write_the_loop_reads_them(tmp_path, tools):
    root = repo(tmp_path)
    cluster = MemoryCluster(refuse=("other",))  # other's record (its Bundle) cannot be written
    loop = Reconciler(LocalCheckout(root), cluster, tools,
                      LoopSettings(apply=ApplyOptions(now=NOW)), clock=lambda: NOW)
    loop.run(until=lambda: True)
    assert loop.state.failure is not None and "gitgate-system/other" in loop.state.failure.message
    # what the inventories are is not known after the failed write: read them
    assert inventory_reads(cluster) == 2
