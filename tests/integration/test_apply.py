"""Apply passes against the API emulator over real HTTP with the official client (or against
a real cluster with GITGATE_TEST_KUBECONFIG): staging, skip-unchanged, prune, holds, suspend,
conflicts."""

from __future__ import annotations

import textwrap
from datetime import timedelta

import pytest

from gitgate.apply.work import ApplyOptions
from gitgate.karmada.policy import policy_name
from gitgate.passes.onepass import reconcile
from tests.support.applyrepo import NOW, Repo, result_of
from tests.support.manifests import cm, crd_yaml, deployment
from tests.support.records import names, record

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path, kube) -> Repo:
    return Repo(tmp_path / "repo", kube)


def test_first_apply_creates_everything_in_stage_order(repo, tools, kube):
    result = repo.apply(tools)
    assert result.ok, [(b.bundle, b.message) for b in result.bundles]
    writes = [p for m, p in kube.bundle_writes()]
    position = {p.rsplit("/", 1)[-1]: i for i, p in enumerate(writes)}
    assert position[repo.web_ns] < position["web"] and position[repo.db_ns] < position["db"]
    policies = [i for i, p in enumerate(writes) if "propagationpolicies" in p]
    templates = [i for i, p in enumerate(writes) if "/configmaps/" in p or "/deployments/" in p]
    # a bundle's first write: its own policies before its templates (Karmada claims each
    # template as it arrives), after the Namespaces they live in
    assert policies and max(policies) < min(templates)
    assert min(policies) > max(position[repo.web_ns], position[repo.db_ns])
    web = repo.live("apps/v1", "Deployment", repo.web_ns, "web")
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "web:1"
    assert web["metadata"]["labels"]["gitgate.io/bundle"] == f"{repo.run}-web"
    policy = repo.live("policy.karmada.io/v1alpha1", "PropagationPolicy", repo.web_ns,
                       policy_name(f"{repo.run}-web", repo.run))
    assert policy["spec"]["propagateDeps"] is True and "suspension" not in policy["spec"]
    assert {s["name"] for s in policy["spec"]["resourceSelectors"]} == {
        "web", "web-config", "extra-0", "extra-1", "extra-2", "extra-3"}
    inventory = record(kube.cluster, f"{repo.run}-web", repo.run)
    assert inventory.verdict == "apply" and "web" in names(inventory)
    ns = repo.live("v1", "Namespace", "", "gitgate-system")
    assert ns["metadata"]["labels"]["namespace.karmada.io/skip-auto-propagation"] == "true"


def test_crds_are_applied_first_and_established_before_their_objects(repo, tools, kube):
    group = f"{repo.run}.example.com"
    repo.write({"widgets/bundle.yaml": f"name: {repo.run}-widgets\n",
                "widgets/all.yaml": crd_yaml(group, "Widget") + textwrap.dedent(f"""\
                    ---
                    apiVersion: {group}/v1
                    kind: Widget
                    metadata: {{name: w1, namespace: {repo.web_ns}}}
                    spec: {{size: 3}}
                    """)})
    try:
        result = repo.apply(tools)
        assert result.ok, [(b.bundle, b.message) for b in result.bundles]
        assert repo.live(f"{group}/v1", "Widget", repo.web_ns, "w1")["spec"] == {"size": 3}
        writes = [p for _, p in kube.bundle_writes()]
        crd = next(i for i, p in enumerate(writes) if "customresourcedefinitions" in p)
        widget = next(i for i, p in enumerate(writes) if p.endswith("/widgets/w1"))
        assert crd < widget
    finally:
        kube.cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                            f"widgets.{group}")


def test_second_pass_without_change_writes_nothing(repo, tools, kube):
    repo.apply(tools)
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.ok and kube.cluster.writes() == []
    if kube.emulator is not None:
        before = len(kube.emulator.state.writes())
        repo.apply(tools, NOW + timedelta(minutes=2))
        assert len(kube.emulator.state.writes()) == before


def test_only_the_changed_object_is_written_and_resync_corrects_only_drift(repo, tools, kube):
    first = repo.apply(tools)
    assert {str(c.action) for b in first.bundles for c in b.changes.changes} == {"created"}
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns, "v2") + deployment("db", repo.db_ns)})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.ok
    assert kube.bundle_writes() == [
        ("PATCH", f"/api/v1/namespaces/{repo.db_ns}/configmaps/db-config")]
    db = result_of(result, "-db")
    assert [(str(c.ref), str(c.action)) for c in db.changes.changes if c.action != "unchanged"] \
        == [(f"ConfigMap {repo.db_ns}/db-config", "configured")]
    assert repo.live("v1", "ConfigMap", repo.db_ns, "db-config")["data"] == {"value": "v2"}

    # someone edits a field Git sets; the periodic resync reads every open object (one list
    # per kind and namespace) and writes back only that one (taking the field over)
    kube.cluster.request("PATCH", f"/api/v1/namespaces/{repo.web_ns}/configmaps/extra-1",
                         body={"data": {"value": "edited by hand"}},
                         content_type="application/merge-patch+json")
    result = repo.apply(tools, NOW + timedelta(minutes=11), force_conflicts=True)
    assert result.ok
    assert kube.bundle_writes() == [
        ("PATCH", f"/api/v1/namespaces/{repo.web_ns}/configmaps/extra-1")]
    reads = [p.split("?")[0] for m, p, *_ in kube.cluster.sent
             if m == "GET" and f"/namespaces/{repo.web_ns}/" in p]
    assert reads.count(f"/api/v1/namespaces/{repo.web_ns}/configmaps") == 1
    assert reads.count(f"/apis/apps/v1/namespaces/{repo.web_ns}/deployments") == 1
    assert not [p for p in reads if "/configmaps/" in p or "/deployments/" in p]  # no GETs
    web = result_of(result, "-web")
    assert [str(r) for r in web.changes.refs("configured")] == [
        f"ConfigMap {repo.web_ns}/extra-1"]
    assert repo.live("v1", "ConfigMap", repo.web_ns, "extra-1")["data"] == {"value": "v1"}
    assert result.inventories_written >= 1  # the finished resync is recorded
    repo.apply(tools, NOW + timedelta(minutes=12))
    assert [m for m, p, *_ in kube.cluster.sent if m == "GET" and "/configmaps/extra" in p] == []


def test_removed_object_is_pruned_and_prune_disabled_survives(repo, tools, kube):
    repo.write({"web/keep.yaml": cm("keep-me", repo.web_ns, annotations="gitgate.io/prune: "
                                                                         "disabled")})
    repo.apply(tools)
    repo.write({"web/app.yaml": deployment("web", repo.web_ns) + cm("web-config", repo.web_ns)
                + "".join(cm(f"extra-{i}", repo.web_ns) for i in range(3))})
    repo.remove("web/keep.yaml")
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.ok, [(b.bundle, b.message) for b in result.bundles]
    web = result_of(result, "-web")
    assert [r.name for r in web.pruned] == ["extra-3"] and [r.name for r in web.kept] == [
        "keep-me"]
    assert ("DELETE", f"/api/v1/namespaces/{repo.web_ns}/configmaps/extra-3") in \
        kube.bundle_writes()
    assert repo.live("v1", "ConfigMap", repo.web_ns, "extra-3") is None
    assert repo.live("v1", "ConfigMap", repo.web_ns, "keep-me") is not None
    assert not [w for w in kube.bundle_writes() if "keep-me" in w[1]]


def test_mass_prune_is_blocked_until_allowed(repo, tools, kube):
    repo.apply(tools)
    repo.remove("web/app.yaml")
    repo.remove("db/app.yaml")
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.prune_blocked and not result.ok
    assert "--allow-mass-prune" in result_of(result, "-web").message
    assert [w for w in kube.bundle_writes() if w[0] == "DELETE"] == []
    assert repo.live("apps/v1", "Deployment", repo.web_ns, "web") is not None
    result = repo.apply(tools, NOW + timedelta(minutes=2), allow_mass_prune=True)
    assert not result.prune_blocked
    assert repo.live("apps/v1", "Deployment", repo.web_ns, "web") is None


def test_held_bundle_receives_no_write_while_its_neighbour_is_applied(repo, tools, kube):
    repo.apply(tools)
    repo.write({
        "gates/web.yaml": f"""
            apiVersion: gitgate.io/v1alpha1
            kind: Gate
            metadata: {{name: web-freeze}}
            spec: {{bundles: ["{repo.run}-web"], reason: INC-7}}
        """,
        "web/app.yaml": deployment("web", repo.web_ns, "web:2") + cm("web-config", repo.web_ns),
        "db/app.yaml": cm("db-config", repo.db_ns, "v2") + deployment("db", repo.db_ns),
    })
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    web = result_of(result, "-web")
    assert web.verdict == "held" and "INC-7" in web.message and web.applied == []
    writes = kube.bundle_writes()
    assert writes == [("PATCH", f"/api/v1/namespaces/{repo.db_ns}/configmaps/db-config")]
    if kube.emulator is not None:
        server_writes = [r.path for r in kube.emulator.state.writes()]
        assert not [p for p in server_writes[-5:] if f"/namespaces/{repo.web_ns}/" in p]
    live = repo.live("apps/v1", "Deployment", repo.web_ns, "web")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "web:1"
    assert repo.live("v1", "ConfigMap", repo.web_ns, "extra-0") is not None  # not pruned
    inventory = record(kube.cluster, f"{repo.run}-web", repo.run)
    assert inventory.verdict == "held" and "web-freeze" in str(inventory.reasons)


def test_suspended_bundle_templates_update_and_policies_carry_suspension(repo, tools, kube):
    repo.apply(tools)
    gate = {"gates/move.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: move-db}}
        spec: {{bundles: ["{repo.run}-db"], action: suspend, clusters: [member2], reason: b/g}}
    """}
    repo.write({**gate, "db/app.yaml": cm("db-config", repo.db_ns, "v2")
                + deployment("db", repo.db_ns)})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result_of(result, "-db").verdict == "suspended" and result.ok
    assert repo.live("v1", "ConfigMap", repo.db_ns, "db-config")["data"] == {"value": "v2"}
    policy_args = ("policy.karmada.io/v1alpha1", "PropagationPolicy", repo.db_ns,
                   policy_name(f"{repo.run}-db", repo.run))
    assert repo.live(*policy_args)["spec"]["suspension"] == {
        "dispatchingOnClusters": {"clusterNames": ["member2"]}}
    repo.remove("gates/move.yaml")
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result_of(result, "-db").verdict == "apply"
    assert "suspension" not in repo.live(*policy_args)["spec"]


def test_conflict_with_another_field_manager_is_reported_by_name(repo, tools, kube):
    repo.apply(tools)
    path = f"/api/v1/namespaces/{repo.db_ns}/configmaps/db-config"
    status, _ = kube.cluster.request(
        "PATCH", path, query={"fieldManager": "hotfix-operator", "force": "true"},
        body={"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "db-config", "namespace": repo.db_ns},
              "data": {"value": "hotfix"}}, content_type="application/apply-patch+yaml")
    assert status == 200
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns, "v3") + deployment("db", repo.db_ns)})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    db = result_of(result, "-db")
    assert db.failed and db.reason == "ApplyFailed"
    assert '"hotfix-operator"' in db.message and "db-config" in db.message
    assert "--force-conflicts" in db.message
    assert result_of(result, "-web").failed is False
    result = repo.apply(tools, NOW + timedelta(minutes=2), force_conflicts=True)
    assert result.ok
    assert repo.live("v1", "ConfigMap", repo.db_ns, "db-config")["data"] == {"value": "v3"}


def test_an_object_beyond_the_servers_request_limit_fails_its_bundle_by_name(repo, tools, kube):
    """kube-apiserver answers a body over 3 MiB with 413 before reading it, and closes the
    connection while the client is still sending: the answer is read all the same."""
    repo.apply(tools)
    huge = "x" * (5 << 20)
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns, huge) + deployment("db", repo.db_ns),
                "web/extra.yaml": cm("web-extra", repo.web_ns, "new")})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    db = result_of(result, "-db")
    assert db.failed and db.reason == "ApplyFailed"
    assert "ConfigMap" in db.message and "db-config" in db.message and "413" in db.message
    assert "under 1 MiB" in db.message and huge[:100] not in db.message
    assert result_of(result, "-web").failed is False  # its neighbour is written
    assert repo.live("v1", "ConfigMap", repo.web_ns, "web-extra")["data"] == {"value": "new"}
    assert repo.live("v1", "ConfigMap", repo.db_ns, "db-config")["data"] != {"value": huge}


def test_a_failed_delete_stays_in_the_inventory(repo, tools, kube):
    if kube.emulator is None:
        pytest.skip("needs the emulator's fault hooks")
    repo.apply(tools)
    target = f"/api/v1/namespaces/{repo.web_ns}/configmaps/extra-3"

    def refuse_delete(request):
        if request.method == "DELETE" and request.path == target:
            return 500, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "message": "etcdserver: request timed out", "reason": "InternalError",
                         "code": 500}
        return None

    kube.emulator.state.faults.append(refuse_delete)
    repo.write({"web/app.yaml": deployment("web", repo.web_ns) + cm("web-config", repo.web_ns)
                + "".join(cm(f"extra-{i}", repo.web_ns) for i in range(3))})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    web = result_of(result, "-web")
    assert web.failed and web.reason == "PruneFailed" and "extra-3" in web.message
    assert "extra-3" in names(record(kube.cluster, f"{repo.run}-web", repo.run))
    kube.emulator.state.faults.clear()
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result.ok and [r.name for r in result_of(result, "-web").pruned] == ["extra-3"]
    assert "extra-3" not in names(record(kube.cluster, f"{repo.run}-web", repo.run))


def test_an_unreadable_repo_config_prunes_nothing(repo, tools, kube):
    repo.apply(tools)
    repo.write({"gitgate.yaml": "paths: [unclosed\n"})
    result = repo.apply(tools, NOW + timedelta(minutes=1), allow_mass_prune=True)
    assert [w for w in kube.bundle_writes() if w[0] == "DELETE"] == []
    assert repo.live("apps/v1", "Deployment", repo.web_ns, "web") is not None
    assert result.bundles == [] or all(not b.pruned for b in result.bundles)


def test_bundle_glob_leaves_other_bundles_alone(repo, tools, kube):
    repo.apply(tools)
    kube.cluster.forget()
    result = reconcile(repo.root, tools, kube.cluster, ApplyOptions(
        now=NOW + timedelta(minutes=11), instance=repo.run), bundle_glob=f"{repo.run}-db").result
    assert result is not None
    assert [b.bundle for b in result.bundles] == [f"{repo.run}-db"]
    assert all(f"/namespaces/{repo.web_ns}/" not in p for _, p in kube.bundle_writes())
    assert repo.live("apps/v1", "Deployment", repo.web_ns, "web") is not None


def test_apps_of_a_split_source_that_fails_to_render_are_not_pruned(repo, tools, kube):
    repo.write({"web/bundle.yaml": f"name: {repo.run}-web\nsplit: app\n"})
    result = repo.apply(tools)
    assert f"{repo.run}-web/web" in [b.bundle for b in result.bundles]
    repo.write({"web/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n"})
    result = repo.apply(tools, NOW + timedelta(minutes=1), allow_mass_prune=True)
    web = result_of(result, "-web")
    assert web.failed and web.reason == "RenderFailed"
    assert [w for w in kube.bundle_writes() if w[0] == "DELETE"] == []
    assert repo.live("apps/v1", "Deployment", repo.web_ns, "web") is not None


def test_bundles_below_a_folder_whose_bundle_yaml_breaks_are_not_pruned(repo, tools, kube):
    """Discovery does not descend below a bundle.yaml it cannot read (what it meant is
    unknown), so the bundles that were there have not left Git: nothing of them is deleted."""
    repo.write({"web/extra/bundle.yaml": f"name: {repo.run}-extra\n",
                "web/extra/cm.yaml": cm("below", repo.web_ns)})
    assert f"{repo.run}-extra" in [b.bundle for b in repo.apply(tools).bundles]
    repo.write({"web/bundle.yaml": f"name: {repo.run}-web\nlabels: a: b\n"})
    result = repo.apply(tools, NOW + timedelta(minutes=1), allow_mass_prune=True)
    broken = next(b for b in result.bundles if b.failed)
    assert broken.reason == "InvalidConfig" and "web/bundle.yaml:2" in broken.message
    assert [w for w in kube.bundle_writes() if w[0] == "DELETE"] == []
    assert repo.live("v1", "ConfigMap", repo.web_ns, "below") is not None


@pytest.mark.parametrize("concurrency", [1, 8])
def test_sigterm_mid_pass_finishes_the_objects_in_flight_and_writes_status(
        repo, tools, kube, concurrency):
    if kube.emulator is None:
        pytest.skip("needs the emulator's request hooks")
    import threading

    from gitgate.passes.onepass import plan_checkout
    from tests.support.engine import run_pass

    stop = threading.Event()

    def sigterm_after_first_write(request):
        if request.method == "PATCH" and "gitgate-system" not in request.path and (
                "bundles.gitgate.io" not in request.path):
            stop.set()
        return None

    kube.emulator.state.faults.append(sigterm_after_first_write)
    plan = plan_checkout(repo.root, tools, NOW).plan
    kube.cluster.forget()
    result = run_pass(plan, kube.cluster, ApplyOptions(now=NOW, instance=repo.run,
                                                       concurrency=concurrency), stop=stop)
    assert {b.reason for b in result.bundles if b.failed} == {"Interrupted"}
    written = [path for _, path in kube.bundle_writes()]
    # the objects in flight (one at a time: the first), nothing sent after the stop; all in
    # stage one (the namespaces)
    assert 1 <= len(written) <= concurrency
    assert set(written) <= {f"/api/v1/namespaces/{repo.db_ns}",
                            f"/api/v1/namespaces/{repo.web_ns}"}
    if concurrency == 1:
        assert written == [f"/api/v1/namespaces/{repo.db_ns}"]
    assert repo.db_ns in names(record(kube.cluster, f"{repo.run}-ns", repo.run))  # not orphaned
    assert record(kube.cluster, f"{repo.run}-web", repo.run).message.startswith("Interrupted")


def test_objects_of_a_deleted_crd_leave_the_inventory(repo, tools, kube):
    group = f"{repo.run}.example.com"
    repo.write({"crd/bundle.yaml": f"name: {repo.run}-crd\n",
                "crd/crd.yaml": crd_yaml(group, "Gadget"),
                "gadgets/bundle.yaml": f"name: {repo.run}-gadgets\n",
                "gadgets/g.yaml": f"apiVersion: {group}/v1\nkind: Gadget\nmetadata: "
                                  f"{{name: g1, namespace: {repo.web_ns}}}\n"})
    assert repo.apply(tools).ok
    kube.cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                        f"gadgets.{group}")
    kube.cluster.refresh_discovery()
    repo.remove("gadgets/g.yaml")
    repo.remove("crd/crd.yaml")
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert not any(b.reason == "PruneFailed" for b in result.bundles), [
        (b.bundle, b.message) for b in result.bundles if b.failed]
    assert "g1" not in names(record(kube.cluster, f"{repo.run}-gadgets", repo.run))


def shop_yaml(ns: str, common: str, order_image: str) -> str:
    """Two apps in one split source, both reading the shared ConfigMap `common`."""
    apps = "".join(deployment(name, ns, image, config="common")
                   for name, image in (("cart", "cart:1"), ("order", order_image)))
    return cm("common", ns, common) + apps


def test_a_shared_configmap_used_by_a_held_app_is_not_written(repo, tools, kube):
    shared = repo.kube.ns("shared")
    repo.write({
        "ns/namespaces.yaml": "".join(
            f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
            for n in (repo.web_ns, repo.db_ns, shared)),
        "shop/bundle.yaml": f"name: {repo.run}-shop\nsplit: app\n",
        "shop/all.yaml": shop_yaml(shared, "v1", "order:1"),
    })
    result = repo.apply(tools)
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    repo.write({
        "gates/cart.yaml": f"""
            apiVersion: gitgate.io/v1alpha1
            kind: Gate
            metadata: {{name: cart-debug}}
            spec: {{bundles: ["{repo.run}-shop/cart"], reason: INC-11}}
        """,
        "shop/all.yaml": shop_yaml(shared, "v2", "order:2"),
    })
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    writes = [p for _, p in kube.bundle_writes()]
    assert f"/apis/apps/v1/namespaces/{shared}/deployments/order" in writes
    assert not [p for p in writes if p.endswith("/configmaps/common")]
    assert repo.live("v1", "ConfigMap", shared, "common")["data"] == {"value": "v1"}


def test_a_bundle_that_left_git_is_pruned_with_its_inventory(repo, tools, kube):
    import shutil

    repo.apply(tools)
    shutil.rmtree(repo.root / "db")
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.ok
    gone = result_of(result, "-db")
    assert gone.verdict == "removed"
    assert {r.name for r in gone.pruned} == {"db", "db-config",
                                             policy_name(f"{repo.run}-db", repo.run)}
    assert repo.live("apps/v1", "Deployment", repo.db_ns, "db") is None
    assert record(kube.cluster, f"{repo.run}-db", repo.run) is None
    assert repo.live("apps/v1", "Deployment", repo.web_ns, "web") is not None


@pytest.mark.parametrize("covered_by", ["name", "labels", "unreadable gate"])
def test_a_bundle_that_left_git_under_a_gate_is_not_pruned_until_the_gate_lifts(
        repo, tools, kube, covered_by):
    import shutil

    repo.write({"db/bundle.yaml": f"name: {repo.run}-db\nlabels: {{tier: data}}\n"})
    repo.apply(tools)
    spec = {"name": f'bundles: ["{repo.run}-db"]', "labels": "selector: {matchLabels: "
            "{tier: data}}", "unreadable gate": "bundles: 7"}[covered_by]
    repo.write({"gates/keep.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: keep-db}}
        spec: {{{spec}, reason: INC-12}}
    """})
    shutil.rmtree(repo.root / "db")
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    gone = result_of(result, "-db")
    assert gone.verdict == "held" and gone.pruned == [] and "nothing is pruned" in gone.message
    assert kube.bundle_writes() == []
    assert repo.live("apps/v1", "Deployment", repo.db_ns, "db") is not None
    repo.remove("gates/keep.yaml")
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result_of(result, "-db").verdict == "removed"
    assert repo.live("apps/v1", "Deployment", repo.db_ns, "db") is None


def test_an_immutable_field_fails_by_name_unless_the_object_allows_recreation(repo, tools, kube):
    repo.apply(tools)
    before = repo.live("apps/v1", "Deployment", repo.db_ns, "db")
    moved = deployment("db", repo.db_ns).replace("matchLabels: {app: db}",
                                                 "matchLabels: {app: db, v: '2'}").replace(
        "labels: {app: db}", "labels: {app: db, v: '2'}")
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns) + moved})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    db = result_of(result, "-db")
    assert db.failed and db.reason == "ImmutableField"
    assert "spec.selector" in db.message and "gitgate.io/recreate: allowed" in db.message
    assert repo.live("apps/v1", "Deployment", repo.db_ns, "db")["metadata"]["uid"] == before[
        "metadata"]["uid"]

    allowed = moved.replace("metadata: {name: db,", "metadata: {annotations: "
                            "{gitgate.io/recreate: allowed}, name: db,")
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns) + allowed})
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    db = result_of(result, "-db")
    assert not db.failed, db.message
    assert [r.name for r in db.recreated] == ["db"]
    live = repo.live("apps/v1", "Deployment", repo.db_ns, "db")
    assert live["spec"]["selector"] == {"matchLabels": {"app": "db", "v": "2"}}
    assert live["metadata"]["uid"] != before["metadata"]["uid"]


def test_an_immutable_field_is_never_recreated_in_a_suspended_bundle(repo, tools, kube):
    repo.apply(tools)
    moved = deployment("db", repo.db_ns).replace(
        "metadata: {name: db,", "metadata: {annotations: {gitgate.io/recreate: allowed}, "
        "name: db,").replace("matchLabels: {app: db}", "matchLabels: {app: db, v: '2'}").replace(
        "labels: {app: db}", "labels: {app: db, v: '2'}")
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns) + moved, "gates/s.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: s}}
        spec: {{bundles: ["{repo.run}-db"], action: suspend, reason: move}}
    """})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    db = result_of(result, "-db")
    assert db.failed and db.reason == "ImmutableField" and "suspended" in db.message
    assert db.recreated == []
    assert not [m for m, p in kube.bundle_writes() if m == "DELETE"]
