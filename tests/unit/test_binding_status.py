"""Karmada's ResourceBinding parsed once into typed records: what dispatch, hook progress,
suspension confirmation and the override lag read. Shaped as Karmada writes it (observed on
../shared/karmada-harness); what Karmada has not written yet, or writes in a shape gitgate
does not know, reads as absent, never as ready."""

from __future__ import annotations

from gitgate.karmada.bindingstatus import BINDING_ID_LABEL, Health, parse_binding
from gitgate.karmada.dispatch import MemberState


def test_every_signal_is_read_from_where_karmada_writes_it():
    status = parse_binding({
        "metadata": {"labels": {BINDING_ID_LABEL: "4f2c"}},
        "spec": {"clusters": [{"name": "member1", "replicas": 2}, {"name": "member2"}],
                 "resource": {"resourceVersion": "812"},
                 "suspension": {"dispatchingOnClusters": {"clusterNames": ["member2"]}}},
        "status": {"conditions": [{"type": "Scheduled", "status": "True"}],
                   "aggregatedStatus": [
                       {"clusterName": "member1", "applied": True, "health": "Healthy",
                        "status": {"resourceTemplateGeneration": 3, "replicas": 2}},
                       {"clusterName": "member2", "applied": False,
                        "appliedMessage": "namespaces \"shop\" not found"}]}})
    assert status.scheduled_on == ("member1", "member2") and status.binding_id == "4f2c"
    assert status.scheduled("member1") and not status.scheduled("member3")
    assert status.suspended("member2") and not status.suspended("member1")
    assert status.suspension() == {"dispatchingOnClusters": {"clusterNames": ["member2"]}}
    assert status.seen_resource_version == "812"
    one, two = status.members["member1"], status.members["member2"]
    assert (one.applied, one.health, one.template_generation) == (True, Health.HEALTHY, 3)
    assert (two.applied, two.applied_message) == (False, 'namespaces "shop" not found')


def test_a_refused_schedule_is_not_scheduled_anywhere_and_suspension_everywhere_wins():
    status = parse_binding({
        "spec": {"clusters": [{"name": "member1"}], "suspension": {"dispatching": True}},
        "status": {"conditions": [{"type": "Scheduled", "status": "False",
                                   "message": "0/2 clusters are available"}]}})
    assert not status.scheduled("member1")
    assert status.scheduling_refused == "0/2 clusters are available"
    assert status.suspended("any") and status.suspension() == {"dispatching": True}


def test_unwritten_or_unknown_shapes_read_as_absent_never_as_ready():
    empty = parse_binding({})
    assert empty.scheduled_on == () and empty.members == {} and empty.suspension() is None
    odd = parse_binding({"spec": {"clusters": "member1", "suspension": ["x"]},
                         "status": {"aggregatedStatus": [
                             "member1", {"clusterName": "member1", "applied": True,
                                         "health": "Fine",
                                         "status": {"resourceTemplateGeneration": "3"}}]}})
    assert odd.scheduled_on == () and odd.suspension() is None
    member = odd.members["member1"]
    assert member.health is Health.UNKNOWN and member.template_generation is None


def test_member_states_rank_the_most_actionable_problem_first():
    assert sorted(MemberState, reverse=True)[-1] is MemberState.NOT_SCHEDULED
    assert (MemberState.NOT_SCHEDULED < MemberState.APPLY_FAILED < MemberState.UNHEALTHY
            < MemberState.NOT_APPLIED < MemberState.HEALTH_UNKNOWN < MemberState.BEHIND
            < MemberState.READY)
