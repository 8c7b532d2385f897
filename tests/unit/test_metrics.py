"""The loop's metrics as Prometheus reads them: gates active or not, bundles that leave stop
being reported."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gitgate.apiserver.transport import resource_of
from gitgate.status.metrics import LoopMetrics


def samples(metrics: LoopMetrics, name: str) -> dict[tuple, float]:
    families = {f.name: f for f in text_string_to_metric_families(
        metrics.exposition().decode())}
    if name not in families:
        return {}
    return {tuple(sorted(s.labels.items())): s.value for s in families[name].samples
            if not s.name.endswith("_created")}


def test_gate_active_follows_the_last_pass():
    metrics = LoopMetrics(tool_versions={"helm": "v4", "kustomize": "v5"})
    metrics.record_gates({"weekend-freeze": True, "pause-shop": False})
    assert samples(metrics, "gitgate_gate_active") == {
        (("gate", "weekend-freeze"),): 1, (("gate", "pause-shop"),): 0}
    metrics.record_gates({"weekend-freeze": False})
    assert samples(metrics, "gitgate_gate_active") == {(("gate", "weekend-freeze"),): 0}


def test_a_bundle_that_left_is_no_longer_reported():
    metrics = LoopMetrics()
    metrics.record_applied(["a", "b"], 1000.0)
    metrics.forget_bundles({"a"})
    assert samples(metrics, "gitgate_bundle_last_applied_timestamp_seconds") == {
        (("bundle", "a"),): 1000.0}


def test_fetch_results_are_counted():
    metrics = LoopMetrics()
    metrics.record_fetch(True, 50.0)
    metrics.record_fetch(False, 60.0)
    assert samples(metrics, "gitgate_git_fetch") == {
        (("result", "success"),): 1, (("result", "failure"),): 1}
    assert samples(metrics, "gitgate_git_last_fetch_timestamp_seconds") == {(): 50.0}
    assert samples(metrics, "gitgate_git_last_fetch_success") == {(): 0}


def test_verdicts_follow_each_pass_and_a_bundle_that_left_is_dropped():
    metrics = LoopMetrics()
    metrics.record_verdicts({"a": "apply", "b": "held"})
    metrics.record_verdicts({"a": "apply", "b": "apply", "c": "failed"})
    said = {k: v for k, v in samples(metrics, "gitgate_bundle_verdict").items() if v}
    assert said == {(("bundle", "a"), ("verdict", "apply")): 1,
                    (("bundle", "b"), ("verdict", "apply")): 1,
                    (("bundle", "c"), ("verdict", "failed")): 1}
    metrics.record_verdicts({"c": "apply"})
    left = samples(metrics, "gitgate_bundle_verdict")
    assert {k[0] for k in left} == {("bundle", "c")}
    assert {k: v for k, v in left.items() if v} == {(("bundle", "c"), ("verdict", "apply")): 1}


def test_failed_passes_count_the_passes_in_a_row_and_drop_a_bundle_that_left():
    metrics = LoopMetrics()
    metrics.record_failures({"a"}, {"a", "b"})
    metrics.record_failures({"a", "b"}, {"a", "b"})
    assert samples(metrics, "gitgate_bundle_failed_passes") == {
        (("bundle", "a"),): 2, (("bundle", "b"),): 1}
    metrics.record_failures({"b"}, {"a", "b", "c"})
    assert samples(metrics, "gitgate_bundle_failed_passes") == {
        (("bundle", "a"),): 0, (("bundle", "b"),): 2, (("bundle", "c"),): 0}
    metrics.record_failures(set(), {"b"})
    assert samples(metrics, "gitgate_bundle_failed_passes") == {(("bundle", "b"),): 0}


def test_the_per_bundle_text_is_formatted_again_only_after_a_change():
    metrics = LoopMetrics()
    metrics.record_verdicts({"a": "apply"})
    first = metrics.bundles.exposition()
    assert metrics.bundles.exposition() is first  # a scrape between passes: the kept text
    metrics.record_fetch(True, 50.0)  # the loop's own series are not the bundles'
    assert metrics.bundles.exposition() is first
    for change in (lambda: metrics.record_verdicts({"a": "held"}),
                   lambda: metrics.record_failures({"a"}, {"a"}),
                   lambda: metrics.record_applied(["a"], 70.0),
                   lambda: metrics.forget_bundles(set()),
                   lambda: metrics.record_dispatch({})):
        before = metrics.bundles.exposition()
        change()
        assert metrics.bundles.exposition() is not before
    said = samples(metrics, "gitgate_bundle_verdict")
    assert {k: v for k, v in said.items() if v} == {
        (("bundle", "a"), ("verdict", "held")): 1}
    assert samples(metrics, "gitgate_bundle_failed_passes") == {(("bundle", "a"),): 1}
    assert samples(metrics, "gitgate_bundle_last_applied_timestamp_seconds") == {}  # forgotten
    assert samples(metrics, "gitgate_git_last_fetch_timestamp_seconds") == {(): 50.0}


@pytest.mark.parametrize("path, resource", [
    ("/api/v1/namespaces/shop/configmaps/web", "configmaps"),
    ("/api/v1/namespaces/shop/configmaps", "configmaps"),
    ("/api/v1/namespaces/shop", "namespaces"),
    ("/api/v1/namespaces", "namespaces"),
    ("/apis/gitgate.io/v1alpha1/namespaces/gitgate-system/bundles/b0001/status",
     "bundles/status"),
    ("/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies/p", "clusterpropagationpolicies"),
    ("/apis/cluster.karmada.io/v1alpha1/clusters?labelSelector=a%3Db", "clusters"),
    ("/apis/coordination.k8s.io/v1/namespaces/gitgate-system/leases/x", "leases"),
    ("/apis", "discovery"), ("/api/v1", "discovery"), ("/apis/apps/v1", "discovery"),
    ("/version", "discovery"),
])
def test_a_request_is_labelled_by_the_resource_it_names_never_by_an_object(path, resource):
    assert resource_of(path) == resource


def test_requests_are_counted_by_verb_and_code_and_timed_by_resource():
    metrics = LoopMetrics()
    metrics.api_request("GET", "bundles", 200, 0.3)
    metrics.api_request("GET", "bundles", 200, 2.0)
    metrics.api_request("PATCH", "bundles/status", 409, 0.02)
    metrics.api_request("GET", "bundles", 0, 30.0)  # no answer
    assert samples(metrics, "gitgate_api_requests") == {
        (("code", "200"), ("verb", "GET")): 2, (("code", "409"), ("verb", "PATCH")): 1,
        (("code", "0"), ("verb", "GET")): 1}
    families = {f.name: f for f in text_string_to_metric_families(
        metrics.exposition().decode())}
    timed = {(s.name.rpartition("_")[2], s.labels.get("le")): s.value
             for s in families["gitgate_api_request_duration_seconds"].samples
             if (s.labels["verb"], s.labels["resource"]) == ("GET", "bundles")}
    assert timed[("count", None)] == 3 and timed[("sum", None)] == 32.3
    assert timed[("bucket", "0.5")] == 1 and timed[("bucket", "+Inf")] == 3
