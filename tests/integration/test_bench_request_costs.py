"""bench/request_costs.py runs against a server and leaves nothing behind (a bench tool that
rots unseen would give no figure when it is needed)."""

from __future__ import annotations

from bench.request_costs import measure


def test_every_kind_of_request_is_sent_and_its_records_are_removed(kube):
    before = {item["metadata"]["name"] for item in kube.cluster.list_objects(
        "gitgate.io/v1alpha1", "Bundle", "gitgate-system")} if kube.cluster.scope_of(
        "gitgate.io/v1alpha1", "Bundle") is not None else set()
    figures = measure(kube.kubeconfig, 3, settle=False)
    served = {"configmap_apply", "configmap_apply_warn", "bundle_spec_apply",
              "writeahead_status_apply", "final_status_apply",
              "final_status_flat_entries_apply", "event_apply", "event_create"}
    # the emulator patches no status subresource; a real server does
    assert set(figures) == served | (set() if kube.emulator else {"final_status_merge_patch"})
    assert all(turn["wall_s"] >= 0 and "server_cpu_s" in turn for turn in figures.values())
    kube.cluster.refresh_discovery()
    after = {item["metadata"]["name"] for item in kube.cluster.list_objects(
        "gitgate.io/v1alpha1", "Bundle", "gitgate-system")}
    assert after <= before  # the 3 records of each run are deleted again


def test_kinds_can_be_measured_alone(kube):
    figures = measure(kube.kubeconfig, 2, settle=False,
                      only=frozenset({"configmap_apply", "configmap_apply_warn"}))
    assert set(figures) == {"configmap_apply", "configmap_apply_warn"}
