"""API server behaviour gitgate depends on, held to the emulator over HTTP (and to a real
cluster with GITGATE_TEST_KUBECONFIG): server-side apply list maps keyed beyond `name` (ports,
volumeMounts, a CRD's x-kubernetes-list-map-keys), Namespace Terminating, finalizers; and what
gitgate makes of them."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from gitgate.apply import recreate
from gitgate.errors import KubeError, Reason
from tests.support.applyrepo import Repo, result_of
from tests.support.manifests import cm

pytestmark = pytest.mark.integration
NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)
APPLY = "application/apply-patch+yaml"


def apply_as(kube, manager: str, path: str, body: dict, force: bool = False):
    query = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return kube.cluster.request("PATCH", path, query=query, body=body, content_type=APPLY)


def namespace(kube, name: str) -> str:
    full = kube.ns(name)
    kube.cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": full}})
    return full


def fields_of(live: dict, manager: str) -> str:
    entry = next(m for m in live["metadata"]["managedFields"] if m["manager"] == manager)
    return json.dumps(entry["fieldsV1"])


def wait_until(check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def service(ns: str, *ports: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
            "spec": {"ports": [{"name": f"p{p}", "port": p} for p in ports]}}


def test_service_ports_are_keyed_by_port_and_protocol(kube):
    ns = namespace(kube, "ports")
    path = f"/api/v1/namespaces/{ns}/services/web"
    assert apply_as(kube, "gitgate", path, service(ns, 80))[0] == 201
    status, live = apply_as(kube, "other", path, service(ns, 443))
    assert status == 200
    assert sorted(p["port"] for p in live["spec"]["ports"]) == [80, 443]
    assert all(p["protocol"] == "TCP" for p in live["spec"]["ports"])
    assert '"k:{\\"port\\":80,\\"protocol\\":\\"TCP\\"}"' in fields_of(live, "gitgate")

    _, live = apply_as(kube, "gitgate", path, service(ns, 80, 8080))
    assert sorted(p["port"] for p in live["spec"]["ports"]) == [80, 443, 8080]


def test_volume_mounts_are_keyed_by_mount_path(kube):
    ns = namespace(kube, "mounts")
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"

    def deployment(*mounts: str) -> dict:
        container = {"name": "web", "image": "nginx",
                     "volumeMounts": [{"name": f"v{m.strip('/')}", "mountPath": m}
                                      for m in mounts]}
        # a real API server refuses a mount of a volume the pod does not declare
        volumes = [{"name": f"v{m.strip('/')}", "emptyDir": {}} for m in mounts]
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [container],
                                               "volumes": volumes}}}}

    assert apply_as(kube, "gitgate", path, deployment("/data"))[0] == 201
    _, live = apply_as(kube, "sidecar-injector", path, deployment("/certs"))
    mounts = live["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert sorted(m["mountPath"] for m in mounts) == ["/certs", "/data"]
    assert '"k:{\\"mountPath\\":\\"/data\\"}"' in fields_of(live, "gitgate")


def rules_crd(group: str) -> dict:
    rule = {"type": "object", "required": ["id"],
            "properties": {"id": {"type": "string"}, "value": {"type": "integer"}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"routes.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Route", "plural": "routes", "singular": "route",
                               "listKind": "RouteList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                             "type": "object", "properties": {
                                 "rules": {"type": "array", "items": rule,
                                           "x-kubernetes-list-type": "map",
                                           "x-kubernetes-list-map-keys": ["id"]},
                                 "hosts": {"type": "array", "items": {"type": "string"}},
                             }}}}}}]}}


def test_a_custom_resource_list_map_merges_by_its_schema_keys_and_other_lists_are_atomic(kube):
    group = f"{kube.run_id}.example.com"
    kube.cluster.apply(rules_crd(group))
    assert kube.cluster.wait_established([f"routes.{group}"]) == []
    ns = namespace(kube, "routes")
    path = f"/apis/{group}/v1/namespaces/{ns}/routes/r"

    def route(rules: list[dict], hosts: list[str]) -> dict:
        return {"apiVersion": f"{group}/v1", "kind": "Route",
                "metadata": {"name": "r", "namespace": ns},
                "spec": {"rules": rules, "hosts": hosts}}

    assert apply_as(kube, "gitgate", path, route([{"id": "a", "value": 1}], ["x"]))[0] == 201
    status, body = apply_as(kube, "other", path, route([{"id": "b", "value": 2}], ["y"]))
    assert status == 409 and ".spec.hosts" in body["message"]
    status, live = apply_as(kube, "other", path, {
        "apiVersion": f"{group}/v1", "kind": "Route", "metadata": {"name": "r", "namespace": ns},
        "spec": {"rules": [{"id": "b", "value": 2}]}})
    assert status == 200
    assert [r["id"] for r in live["spec"]["rules"]] == ["a", "b"]
    assert live["spec"]["hosts"] == ["x"]
    kube.cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                        f"routes.{group}")


def test_a_terminating_namespace_refuses_new_content_until_it_is_gone(kube):
    ns = namespace(kube, "going")
    kube.cluster.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "old", "namespace": ns}, "data": {"a": "1"}})
    status, body = kube.cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert status == 200 and body["status"]["phase"] == "Terminating"
    assert body["metadata"].get("deletionTimestamp")
    if kube.emulator is not None:  # a real namespace controller may already be done
        with pytest.raises(KubeError) as refused:
            kube.cluster.apply({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "new", "namespace": ns}})
        assert refused.value.status == 403
        assert refused.value.reason is Reason.NAMESPACE_TERMINATING
        assert f"namespace {ns} because it is being terminated" in refused.value.message
        assert "later pass" in refused.value.message
    wait_until(lambda: kube.cluster.get("v1", "Namespace", "", ns) is None)


def test_an_object_with_a_finalizer_stays_until_the_finalizer_is_removed(kube):
    ns = namespace(kube, "final")
    kube.cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "kept", "namespace": ns, "finalizers": ["example.com/hold"]}})
    assert kube.cluster.delete("v1", "ConfigMap", ns, "kept")
    live = kube.cluster.get("v1", "ConfigMap", ns, "kept")
    assert live is not None and live["metadata"]["deletionTimestamp"]
    status, _ = kube.cluster.request(
        "PATCH", f"/api/v1/namespaces/{ns}/configmaps/kept",
        body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    assert status == 200
    wait_until(lambda: kube.cluster.get("v1", "ConfigMap", ns, "kept") is None)


def test_recreate_names_the_finalizer_that_keeps_the_old_object(kube):
    ns = namespace(kube, "recreate")
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "stuck", "namespace": ns, "finalizers": ["example.com/hold"]}}
    kube.cluster.apply(obj)
    with pytest.raises(KubeError) as stuck:
        recreate.recreate(kube.cluster, obj, timeout=0.5)
    assert "example.com/hold" in stuck.value.message
    kube.cluster.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/stuck",
                         body={"metadata": {"finalizers": None}},
                         content_type="application/merge-patch+json")


def test_a_bundle_written_into_a_terminating_namespace_fails_clearly_then_lands(tmp_path, kube,
                                                                                 tools):
    if kube.emulator is None:
        pytest.skip("needs the emulator's namespace controller to wait for the test")
    repo = Repo(tmp_path, kube)
    assert repo.apply(tools).ok
    kube.emulator.state.namespace_finalize_delay = 3600.0  # hold the namespace Terminating
    kube.cluster.delete("v1", "Namespace", "", repo.db_ns)
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns) + cm("db-extra", repo.db_ns)})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    db = result_of(result, "-db")
    assert db.failed and db.reason is Reason.NAMESPACE_TERMINATING
    assert repo.db_ns in db.message and "later pass" in db.message

    kube.emulator.state.terminating[repo.db_ns] = 0.0  # the namespace controller finishes
    wait_until(lambda: repo.live("v1", "Namespace", "", repo.db_ns) is None)
    result = repo.apply(tools, NOW + timedelta(minutes=20))  # a resync re-creates the lost
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    assert repo.live("v1", "ConfigMap", repo.db_ns, "db-extra") is not None


def test_custom_resources_are_validated_against_their_crd_schema(kube):
    """Karmada's own CRDs (../shared/karmada-crds): a wrong enum value and a selector without
    its required fields are refused with the API server's words, naming every field."""
    ns = namespace(kube, "schema")
    policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
              "metadata": {"name": "bad", "namespace": ns},
              "spec": {"conflictResolution": "Sometimes",
                       "resourceSelectors": [{"name": "web"}]}}
    with pytest.raises(KubeError) as refused:
        kube.cluster.apply(policy)
    message = refused.value.message
    assert refused.value.status == 422
    assert ('spec.conflictResolution: Unsupported value: "Sometimes": supported values: '
            '"Abort", "Overwrite"') in message
    # No assertion on the selector missing apiVersion and kind: the emulator names them
    # (`Required value`, as the CRD's schema says), but kube-apiserver 1.36 with Karmada (the
    # harness, 2026-11-23) accepted such a selector under server-side apply and named only
    # the enum, so only what both say is held here.
    assert kube.cluster.get("policy.karmada.io/v1alpha1", "PropagationPolicy", ns, "bad") is None

    group = f"{kube.run_id}.example.com"
    kube.cluster.apply(rules_crd(group))
    assert kube.cluster.wait_established([f"routes.{group}"]) == []
    with pytest.raises(KubeError) as typed:
        kube.cluster.apply({"apiVersion": f"{group}/v1", "kind": "Route",
                            "metadata": {"name": "r", "namespace": ns},
                            "spec": {"rules": [{"id": "a", "value": "one"}]}})
    # server-side apply builds a typed object before validating: a wrong type fails there
    assert typed.value.status == 500
    assert ('failed to create typed patch object' in typed.value.message
            and '.spec.rules[id="a"].value: expected numeric (int or float), got string'
            in typed.value.message)
    kube.cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                        f"routes.{group}")


def test_a_field_the_schema_does_not_declare_is_refused_under_gitgates_apply(kube):
    """gitgate applies with `fieldValidation=Ignore` (verbs.APPLY_FIELD_VALIDATION): that only
    skips the server's duplicate-key parse. A misspelt field is still refused, naming the
    object and the field, and nothing is written (kube-apiserver 1.36 with Karmada, the
    harness, 2026-11-27: the same 500 for Ignore, Warn and no directive)."""
    group = f"{kube.run_id}.example.com"
    kube.cluster.apply(rules_crd(group))
    assert kube.cluster.wait_established([f"routes.{group}"]) == []
    ns = namespace(kube, "undeclared")
    with pytest.raises(KubeError) as refused:
        kube.cluster.apply({"apiVersion": f"{group}/v1", "kind": "Route",
                            "metadata": {"name": "r", "namespace": ns},
                            "spec": {"rules": [{"id": "a", "value": 1}], "hostz": ["a"]}})
    assert refused.value.status == 500
    assert f"({ns}/r; {group}/v1, Kind=Route)" in refused.value.message
    assert ".spec.hostz: field not declared in schema" in refused.value.message
    assert kube.cluster.get(f"{group}/v1", "Route", ns, "r") is None
    kube.cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                        f"routes.{group}")
    if kube.emulator is None:  # the emulator holds no schema of built-in kinds
        with pytest.raises(KubeError) as built_in:
            kube.cluster.apply({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "app", "namespace": ns},
                                "data": {"a": "1"}, "dta": {"b": "2"}})
        assert ".dta: field not declared in schema" in built_in.value.message
        assert kube.cluster.get("v1", "ConfigMap", ns, "app") is None


def test_a_kind_added_by_someone_else_is_found_without_a_restart(kube, tmp_path):
    """gitgate read a group's discovery; another client then adds a CRD in that group: the
    next request for the new kind re-reads discovery once instead of refusing the kind."""
    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster

    group = f"{kube.run_id}.example.com"
    kube.cluster.apply(rules_crd(group))
    kube.cluster.wait_established([f"routes.{group}"])
    ours = KubeCluster(load_client(kube.kubeconfig))
    assert ours.resource_for(f"{group}/v1", "Route").plural == "routes"  # cached now
    other = rules_crd(group)
    other["metadata"]["name"] = f"gates.{group}"
    other["spec"]["names"] = {"kind": "Door", "plural": "gates", "singular": "gate",
                              "listKind": "DoorList"}
    kube.cluster.apply(other)
    kube.cluster.wait_established([f"gates.{group}"])
    assert ours.resource_for(f"{group}/v1", "Door").plural == "gates"
    with pytest.raises(KubeError, match="does not serve Window"):
        ours.resource_for(f"{group}/v1", "Window")


def test_a_list_of_metadata_alone_names_each_object_and_its_version(kube):
    """What the record reader lists each pass (`list_metadata`): the API server's
    PartialObjectMetadataList, each item the object's metadata without its content; a write
    changes the item's resourceVersion, and the full list still carries everything."""
    ns = namespace(kube, "meta")
    assert kube.cluster.list_metadata("v1", "ConfigMap", ns, "set=meta") == []  # `null`

    def configmap(name: str, value: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"value": value},
                "metadata": {"name": name, "namespace": ns, "labels": {"set": "meta"}}}

    for name in ("a", "b"):
        kube.cluster.apply(configmap(name, "x" * 2000))
    listed = kube.cluster.list_metadata("v1", "ConfigMap", ns, "set=meta")
    assert sorted(i["metadata"]["name"] for i in listed) == ["a", "b"]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in listed)
    assert all("data" not in i and i["metadata"]["uid"] and i["metadata"]["resourceVersion"]
               and i["metadata"]["labels"] == {"set": "meta"} for i in listed)
    before = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in listed}
    kube.cluster.apply(configmap("b", "y"))
    after = {i["metadata"]["name"]: i["metadata"]["resourceVersion"]
             for i in kube.cluster.list_metadata("v1", "ConfigMap", ns, "set=meta")}
    assert after["a"] == before["a"] and after["b"] != before["b"]
    full = kube.cluster.list_objects("v1", "ConfigMap", ns, "set=meta")
    assert sorted(i["data"]["value"][:1] for i in full) == ["x", "y"]


def test_an_event_is_created_once_and_a_second_post_of_it_counts_as_created(kube):
    """gitgate creates its events by POST (`ports.create`), and a POST whose answer was lost
    may go again: the server's 409 AlreadyExists is no failure; a refusal names the object."""
    ns = namespace(kube, "events")
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
             "metadata": {"name": "web.0123456789ab", "namespace": ns},
             "eventTime": "2026-11-18T12:00:00.000000Z",
             "reportingController": "gitgate.io/gitgate", "reportingInstance": "gitgate-test",
             "action": "Apply", "reason": "Applied", "type": "Normal", "note": "applied",
             "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": ns,
                           "name": "web"}}
    assert kube.cluster.create(event) is True
    assert kube.cluster.create(event) is False
    assert kube.cluster.get("events.k8s.io/v1", "Event", ns, "web.0123456789ab")["note"] == (
        "applied")
    no_namespace = {**event, "metadata": {"name": "web.x", "namespace": kube.ns("missing")}}
    with pytest.raises(KubeError) as refused:
        kube.cluster.create(no_namespace)
    assert refused.value.status == 404 and "web.x" in refused.value.message
