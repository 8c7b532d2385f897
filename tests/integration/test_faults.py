"""A fault at any request of a pass loses nothing: the API server answers 500 to the k-th
request of a 3-bundle pass (every k in turn); then a clean pass converges, no live object
that gitgate wrote is missing from an inventory (nothing orphaned), nothing desired was
deleted (no wrong prune), and a bundle that then leaves Git is pruned completely."""

from __future__ import annotations

import contextlib
import shutil
from datetime import UTC, datetime, timedelta

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.ledger import read_inventories
from gitgate.apply.work import ApplyOptions
from gitgate.errors import GitgateError
from gitgate.model import ObjectRef
from gitgate.passes.onepass import reconcile
from tests.conftest import write_files
from tests.kubeapi.server import KubeApiEmulator

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
FILES = {
    "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
    "ns/bundle.yaml": "name: ns\n",
    "ns/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
    "web/bundle.yaml": "name: web\ndependsOn: [ns]\n",
    "web/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: shop}\n"
                    "data: {v: '1'}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, "
                    "namespace: shop}\nspec: {ports: [{port: 80}]}\n",
    "db/bundle.yaml": "name: db\ndependsOn: [ns]\n",
    "db/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db, namespace: shop}\n"
                  "data: {v: '1'}\n",
}
INTERNAL = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "etcdserver: request timed out", "reason": "InternalError",
            "code": 500}


def gitgate_objects(emulator: KubeApiEmulator) -> set[ObjectRef]:
    """Live objects gitgate wrote, but for its own (gitgate-system and its inventories)."""
    found = set()
    for stored in emulator.state.objects.values():
        obj = stored.obj
        meta = obj["metadata"]
        if "gitgate" not in stored.managers or "gitgate-system" in (
                meta.get("name"), meta.get("namespace")) or meta.get("name") == (
                "bundles.gitgate.io"):
            continue
        found.add(ObjectRef.of(obj))
    return found


def recorded(cluster: KubeCluster) -> set[ObjectRef]:
    return {e.ref for inv in read_inventories(cluster, "default").values() for e in inv.entries}


def one_pass(root, tools, cluster, minutes: int):
    return reconcile(root, tools, cluster, ApplyOptions(
        now=NOW + timedelta(minutes=minutes), suspension_timeout=timedelta(seconds=2)),
        revision=f"r{minutes}").result


def test_a_fault_at_any_request_orphans_nothing_and_prunes_nothing_wrongly(tools, tmp_path):
    root = write_files(tmp_path / "repo", FILES)
    with KubeApiEmulator() as emulator:
        cluster = KubeCluster(load_client(str(emulator.write_kubeconfig(tmp_path / "k0"))))
        assert one_pass(root, tools, cluster, 0).ok
        requests = len(emulator.state.requests)
        desired = gitgate_objects(emulator)
    assert requests > 10 and len(desired) >= 4  # 3 bundles' objects and their policies

    for k in range(requests):
        with KubeApiEmulator() as emulator:
            kubeconfig = emulator.write_kubeconfig(tmp_path / f"k{k + 1}")
            cluster = KubeCluster(load_client(str(kubeconfig)))
            seen = []

            def fail_kth(request, k=k, seen=seen):
                seen.append(request)
                return (500, INTERNAL) if len(seen) == k + 1 else None

            emulator.state.faults.append(fail_kth)
            # the pass may end at once (a failed inventory read); state must hold either way
            with contextlib.suppress(GitgateError):
                one_pass(root, tools, cluster, 0)
            emulator.state.faults.clear()
            assert gitgate_objects(emulator) <= recorded(cluster), f"orphaned after fault #{k}"

            result = one_pass(root, tools, cluster, 1)
            assert result.ok, (k, [(b.bundle, b.message) for b in result.bundles if b.failed])
            assert gitgate_objects(emulator) == desired, f"after fault #{k}"
            assert gitgate_objects(emulator) <= recorded(cluster)

            shutil.rmtree(root / "db")
            try:
                result = one_pass(root, tools, cluster, 2)
                assert result.ok
                assert not any(r.name == "db" and r.kind == "ConfigMap"
                               for r in gitgate_objects(emulator)), f"db left behind (#{k})"
            finally:
                write_files(root, {k_: v for k_, v in FILES.items() if k_.startswith("db/")})


def test_a_new_object_whose_write_failed_is_sent_by_the_next_pass(tools, tmp_path):
    """The write-ahead entry of a new object carries no content hash: when its write fails,
    the next pass (no resync due) does not take it for written."""
    root = write_files(tmp_path / "repo", FILES)
    with KubeApiEmulator() as emulator:
        cluster = KubeCluster(load_client(str(emulator.write_kubeconfig(tmp_path / "k"))))
        assert one_pass(root, tools, cluster, 0).ok
        write_files(root, {"db/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: "
                                            "{name: db-extra, namespace: shop}\n"})
        emulator.state.faults.append(
            lambda request: (500, INTERNAL) if request.method == "PATCH"
            and request.path.endswith("/configmaps/db-extra") else None)
        assert not one_pass(root, tools, cluster, 1).ok
        emulator.state.faults.clear()
        extra = ObjectRef("", "ConfigMap", "shop", "db-extra")
        assert extra in recorded(cluster)  # recorded before the write: never orphaned
        assert extra not in gitgate_objects(emulator)
        assert one_pass(root, tools, cluster, 2).ok  # two minutes on: no resync due
        assert extra in gitgate_objects(emulator)


def test_every_write_of_a_pass_skips_the_servers_duplicate_key_parse(tools, tmp_path):
    """Objects, policies, records and their status applied, events created: each write of a
    cold pass says `fieldValidation=Ignore` (verbs.APPLY_FIELD_VALIDATION;
    docs/adr/0062-requests-that-cost-little.md)."""
    root = write_files(tmp_path / "repo", FILES)
    with KubeApiEmulator() as emulator:
        cluster = KubeCluster(load_client(str(emulator.write_kubeconfig(tmp_path / "k"))))
        assert one_pass(root, tools, cluster, 0).ok
        writes = emulator.state.writes()
    applies = [r for r in writes if r.content_type == "application/apply-patch+yaml"]
    assert {r.path.rsplit("/", 2)[-2] for r in applies} >= {"configmaps", "bundles"}
    assert any(r.path.endswith("/status") for r in applies)
    created = [r for r in writes if r.method == "POST"]
    assert created and {r.path.rsplit("/", 1)[-1] for r in created} == {"events"}
    assert not any(r.path.rsplit("/", 2)[-2] == "events" for r in applies)
    assert [r.path for r in writes if r.query.get("fieldValidation") != "Ignore"] == []
