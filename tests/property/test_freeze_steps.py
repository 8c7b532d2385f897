"""Each step of the freeze histories (`tests/support/freezehistories.py`) that goes beyond a
commit of files, taken on purpose once, with every check of the machine after every pass and
what the step is for asserted here: an approval lets exactly the approved content through,
a customization stays through other steps, a platform override waits with the bundle it acts
on, a dependent waits for its dependency, a freeze pushed mid-pass stops what it covers."""

from __future__ import annotations

import pytest

from gitgate.errors import Reason

pytestmark = pytest.mark.integration




def test_an_approval_lets_exactly_the_approved_content_through(history):
    history.gate_the_bundle(i=0, action="hold", expires=False)
    history.change(i=0)
    assert history.live()["a0-c0"] == "v0"
    history.approve_bundle("apps-a0")
    assert history.repo.gates["n-apps-a0"].approvals
    assert history.live()["a0-c0"] == "v1"
    history.change(i=0)  # a later change is held again
    assert history.live()["a0-c0"] == "v1"
    history.customize(i=0, on=True)  # and so is a new customization
    assert "op/gitgate-apps-a0.configmap.a0-c0" not in history.live()


def test_a_customization_stays_through_other_steps_and_waits_with_its_bundle(history):
    history.customize(i=1, on=True)
    made = {k: v for k, v in history.live().items() if k.startswith("op/")}
    assert set(made) == {"op/gitgate-apps-a1.configmap.a1-c0",
                         "op/gitgate-apps-a1.configmap.a1-c1"}
    history.change(i=1)
    history.relabel(i=1, team="shop")
    history.gate_the_team(team="shop", action="hold")
    history.customize(i=1, on=True)  # held: its overrides are not written
    assert {k: v for k, v in history.live().items() if k.startswith("op/")} == made
    history.lift_every_freeze()
    custom = history.repo.apps[1].custom
    assert {k: v for k, v in history.live().items() if k.startswith("op/")} == {
        k: custom for k in made}


def test_a_platform_override_waits_with_the_held_bundle_it_acts_on(history):
    history.override_from_platform(i=2, on=True)
    assert history.live()["pop/p-a2-c1"] == "p1"
    history.pause_folder(i=2)
    history.override_from_platform(i=2, on=True)  # changed while a2 is held
    assert history.live()["pop/p-a2-c1"] == "p1"
    history.override_from_platform(i=2, on=False)  # removed while a2 is held
    assert history.live()["pop/p-a2-c1"] == "p1"
    history.pause_folder(i=2)
    assert "pop/p-a2-c1" not in history.live()


def test_a_dependent_waits_for_a_dependency_the_commit_lacks(history):
    history.depend(i=0, j=1)
    history.rename(i=1, name="x")  # apps-a0 now names a bundle the commit lacks
    history.change(i=0)
    assert history.live()["a0-c0"] == "v0"
    history.depend(i=0, j=1)
    assert history.live()["a0-c0"] == "v1"


@pytest.mark.parametrize("how", ["name", "pause"])
def test_a_freeze_pushed_mid_pass_stops_what_it_covers(history, how):
    history.push_mid_pass(i=2, how=how, action="hold", at=3)
    assert history.counts["mid-pass"]
    last = history.last_result
    assert last is not None and any(
        b.reason == Reason.FROZEN and "committed while this pass was writing" in b.message
        for b in last.bundles), "the freeze appeared too late to stop anything"
    history.change(i=2)  # the next pass judges the newer commit: held
    assert history.live()["a2-c0"] != f"v{history.version}"


@pytest.mark.parametrize("how", ["namespace", "cluster-override"])
def test_a_tenant_reaching_out_of_its_namespace_writes_nothing(history, how):
    history.tenant_reaches_out(how=how)
    assert history.last_result is not None
    assert history.live()["t:t0-c0"] == "v0"  # what it wrote before stays
    assert "t-out" not in history.live()
    history.tenant_reaches_out(how=None)
    assert history.live()["t:t0-c0"] == f"v{history.version}"


def verdict_of(history, name: str) -> str:
    record = history.cluster.get("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                                 f"{history.instance}.{name}")
    return record["status"]["verdict"]


def test_a_rollout_keeps_the_customization_and_overrides_live_through_its_waves(history):
    history.customize(i=0, on=True)
    history.override_from_platform(i=0, on=True)
    live = {k for k in history.live() if k.startswith(("op/", "pop/"))}
    history.roll_out(i=0)
    assert verdict_of(history, "apps-a0") == "suspended"  # wave 1 released, member2 waits
    assert {k for k in history.live() if k.startswith(("op/", "pop/"))} == live
    for _ in range(4):
        history.time_passes()
    assert verdict_of(history, "apps-a0") == "apply"  # both waves baked


def test_a_rollout_halts_when_its_wave_turns_unhealthy_while_baking(history):
    history.roll_out(i=1)
    history.time_passes()  # the wave is seen ready: baking (4h)
    assert verdict_of(history, "apps-a1") == "suspended"
    history.health_flips(i=1, health="Unhealthy")
    assert verdict_of(history, "apps-a1") == "halted"
    history.change(i=1)  # a new commit starts again from wave 1
    assert verdict_of(history, "apps-a1") in ("suspended", "halted")


def test_a_hold_stops_a_rollout_where_it_is_and_its_wave_bakes_afresh_once_lifted(history):
    history.roll_out(i=0)
    new = history.repo.apps[0].objects["a0-c0"]
    history.time_passes()  # wave 1 baking since the roll-out: 3h of 4h
    history.pause_folder(i=0)
    history.time_passes()
    history.time_passes()
    history.pause_folder(i=0)  # lifted 9h after the roll-out: the bake starts again
    history.time_passes()
    assert verdict_of(history, "apps-a0") == "suspended"
    assert history.model.member["member2"]["a0-c0"] != new
    history.time_passes()  # 6h after the lift: wave 2 released
    assert verdict_of(history, "apps-a0") == "apply"
    assert history.model.member["member2"]["a0-c0"] == new
