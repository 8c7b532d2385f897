"""A suspension names member clusters Karmada has (`progression.suspendtargets`): a name that
is no member, or members that cannot be read, suspend the bundle on every cluster."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gitgate.model import RenderedSource, Verdict
from gitgate.model.rolloutspec import Members
from gitgate.plan import make_plan
from gitgate.progression.suspendtargets import with_member_suspensions
from tests.support.objects import bundle, cm, source

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MEMBERS = Members({"member1": {}, "member2": {}})


def suspended_on(clusters: str, members: Members):
    web = bundle("web", cm("web"), src=source("apps/web", name="web"))
    gate = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: g}\n"
            f"spec: {{bundles: [web], action: suspend, clusters: [{clusters}], reason: move}}\n")
    plan = make_plan((RenderedSource(web.source, web.objects),), {"gates/g.yaml": gate}, NOW,
                     "rev")
    return {b.bundle.name: b for b in with_member_suspensions(plan, members).bundles}["web"]


def test_a_suspension_naming_members_stays_as_written():
    item = suspended_on("member2", MEMBERS)
    assert item.verdict.suspend_clusters == ("member2",)


@pytest.mark.parametrize("members", [MEMBERS, Members(error="403 Forbidden")],
                         ids=["no-such-member", "members-unreadable"])
def test_a_suspension_it_cannot_place_suspends_every_cluster_saying_why(members):
    item = suspended_on("membr2", members)
    assert item.verdict.verdict is Verdict.SUSPENDED
    assert item.verdict.suspend_clusters is None
    said = item.verdict.reasons[0].reason
    assert "membr2" in said and "every cluster" in said and "gates/g.yaml" in said


def test_a_karmada_without_members_keeps_the_suspension_as_written():
    assert suspended_on("membr2", Members()).verdict.suspend_clusters == ("membr2",)
