"""The pure parts of suspending before rendering: which known bundles the gate files alone
suspend, and what gitgate last applied of a live policy (from managedFields)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

from gitgate.apply.freezefirst import (
    EarlySuspension,
    owned_fields,
    suspend_first,
    suspended_policy,
    unrecorded,
    wanted_suspensions,
)
from gitgate.apply.inventory import Entry, Inventory
from gitgate.gate.evaluate import gate_states
from gitgate.model import Action, Gate

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def inventory(name: str, verdict: str = "apply", **labels: str) -> Inventory:
    return Inventory(name, verdict=verdict, labels=tuple(sorted(labels.items())))


def suspend(name: str, *, bundles=(), labels=None, clusters=(), until=None) -> Gate:
    return Gate(name, f"gates/{name}.yaml", "r", Action.SUSPEND, tuple(bundles),
                dict(labels or {}), tuple(clusters), until)


def test_only_active_suspend_gates_over_bundles_that_were_open_count():
    gates = [suspend("by-name", bundles=["shop/*"], clusters=["member2"]),
             suspend("by-label", labels={"tier": "db"}, clusters=["member1"]),
             suspend("expired", bundles=["web"], until=NOW - timedelta(minutes=1)),
             Gate("hold", "gates/hold.yaml", "r", Action.HOLD, ("web",))]
    states = gate_states(gates, [], NOW)
    wanted = wanted_suspensions([inventory("shop/carts", tier="db"), inventory("shop/db"),
                                 inventory("web"), inventory("shop/held", "held"),
                                 inventory("shop/broken", "failed")], states)
    assert wanted == {
        "shop/carts": ({"dispatchingOnClusters": {"clusterNames": ["member1", "member2"]}},
                       ("by-name", "by-label")),
        "shop/db": ({"dispatchingOnClusters": {"clusterNames": ["member2"]}}, ("by-name",)),
        # a failed pass left its earlier templates in Karmada: they are suspended too
        "shop/broken": ({"dispatchingOnClusters": {"clusterNames": ["member2"]}},
                        ("by-name",))}


def test_a_gate_without_clusters_suspends_every_cluster():
    states = gate_states([suspend("all", bundles=["web"]),
                          suspend("one", bundles=["web"], clusters=["member2"])], [], NOW)
    assert wanted_suspensions([inventory("web")], states)["web"][0] == {"dispatching": True}


LIVE = {
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
    "metadata": {
        "name": "gitgate-web", "namespace": "shop", "uid": "u", "resourceVersion": "7",
        "labels": {"gitgate.io/bundle": "web", "added-by": "someone"},
        "managedFields": [
            {"manager": "gitgate", "operation": "Apply", "fieldsV1": {
                "f:metadata": {"f:labels": {"f:gitgate.io/bundle": {}}},
                "f:spec": {"f:placement": {"f:clusterAffinity": {"f:clusterNames": {}}},
                           "f:propagateDeps": {}, "f:resourceSelectors": {},
                           "f:overrides": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {},
                                                                  "f:value": {}}}}}},
            {"manager": "karmada-webhook", "operation": "Update", "fieldsV1": {
                "f:spec": {"f:priority": {}, "f:conflictResolution": {}}}}]},
    "spec": {"placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                           "replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
             "propagateDeps": True, "priority": 0, "conflictResolution": "Abort",
             "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "web"}],
             "overrides": [{"name": "a", "value": 1, "extra": 2}, {"name": "b", "value": 3}]},
    "status": {}}


def test_owned_fields_are_what_gitgate_applied_and_nothing_else():
    assert owned_fields(LIVE) == {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "gitgate-web", "namespace": "shop",
                     "labels": {"gitgate.io/bundle": "web"}},
        "spec": {"placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}},
                 "propagateDeps": True,
                 "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap",
                                        "name": "web"}],
                 "overrides": [{"name": "a", "value": 1}]}}
    assert owned_fields(LIVE, manager="someone-else") is None


def test_a_policy_gets_the_widest_suspension_once():
    first = suspended_policy(LIVE, {"dispatchingOnClusters": {"clusterNames": ["member2"]}})
    assert first["spec"]["suspension"] == {"dispatchingOnClusters": {"clusterNames": [
        "member2"]}}
    live = {**LIVE, "spec": {**LIVE["spec"], "suspension": {"dispatchingOnClusters": {
        "clusterNames": ["member1"]}}}}
    wider = suspended_policy(live, {"dispatchingOnClusters": {"clusterNames": ["member2"]}})
    assert wider["spec"]["suspension"] == {"dispatchingOnClusters": {"clusterNames": [
        "member1", "member2"]}}  # a rollout's suspension is never narrowed here
    done = {**LIVE, "spec": {**LIVE["spec"], "suspension": {"dispatching": True}}}
    assert suspended_policy(done, {"dispatchingOnClusters": {"clusterNames": ["m2"]}}) is None


class Policies:
    """Live policies by name, and the names of those written."""

    def __init__(self, *names: str) -> None:
        self.live = {n: copy.deepcopy({**LIVE, "metadata": {**LIVE["metadata"], "name": n}})
                     for n in names}
        self.written: list[str] = []

    def get(self, api_version, kind, namespace, name):
        return self.live.get(name)

    def apply(self, obj, **_):
        self.written.append(obj["metadata"]["name"])
        return obj


def test_a_named_instance_suspends_its_policies_under_the_new_and_the_earlier_name():
    """An instance upgraded from a release that named its policies `gitgate-<bundle>` still
    holds them until its next pass prunes them: a freeze suspends them too."""
    names = ("gitgate.blue.web", "gitgate-web", "teams-own")
    entries = tuple(Entry("policy.karmada.io/v1alpha1", "PropagationPolicy", "shop", n, "h")
                    for n in names)
    states = gate_states([suspend("all", bundles=["web"])], [], NOW)
    cluster = Policies(*names)
    [done] = suspend_first(cluster, {"web": Inventory("web", entries, verdict="apply",
                                                      instance="blue")}, states)
    assert sorted(cluster.written) == ["gitgate-web", "gitgate.blue.web"]
    assert done.error == "" and len(done.written) == 2


def test_a_policy_written_before_rendering_is_not_taken_for_unchanged():
    """The record's hash of a policy suspended here no longer says what it carries: the pass
    that follows writes it from its plan (with the suspension, or without it once approved);
    everything else of the record, and the other records, stay as they were."""
    pp = Entry("policy.karmada.io/v1alpha1", "PropagationPolicy", "shop", "gitgate-web", "h1")
    cm = Entry("v1", "ConfigMap", "shop", "web", "h2")
    inventories = {"web": Inventory("web", (pp, cm), verdict="apply"),
                   "api": Inventory("api", (cm,))}
    done = unrecorded(inventories, [
        EarlySuspension("web", ("freeze",), {"dispatching": True}, (pp.ref,)),
        EarlySuspension("api", ("freeze",), {"dispatching": True}, ())])
    assert [e.hash for e in done["web"].entries] == ["", "h2"]
    assert done["web"].verdict == "apply" and done["api"] is inventories["api"]
    assert inventories["web"].entries[0].hash == "h1"  # the caller's records are not changed
