"""Histories the property suite found failing, shrunk, kept as ordinary tests: each is the
sequence of commits (and a pass after each) that broke the promise, and each still runs
every check of `tests/support/freezehistories.py` after every pass."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration




def test_a_parent_kustomization_taking_apps_in_again_does_not_prune_them(history):
    """The parent's record, kept while a held app claimed some of its objects, still listed
    the objects two other apps had taken over, with the content it had written: taking them
    in again saw them unchanged and wrote nothing, and pruning the apps that left Git deleted
    them."""
    history.swallow_or_release()
    history.pause_folder(0)
    history.swallow_or_release()
    history.swallow_or_release()
    history.the_cluster_holds_what_the_model_says_is_live()


def test_an_object_moved_into_a_held_bundle_is_not_pruned_by_a_suspended_one(history):
    """An object live in a suspended bundle and claimed now by a held one is frozen for
    both: the suspended bundle, whose record lists it, may not prune it (the check kept one
    holder per object, and the suspended bundle's own record came first)."""
    history.gate_the_bundle(action="suspend", expires=False, i=1)
    history.gate_the_bundle(action="hold", expires=False, i=0)
    history.move_object(dst=0, src=1)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_bundle_suspended_by_its_gate_writes_its_own_templates_under_the_suspension(history):
    """A model slip the suite found: a bundle suspended by a gate is written (its policy
    carrying the suspension first), so its own objects are no write to a frozen object."""
    history.swallow_or_release()
    history.swallow_or_release()
    history.pause_folder(1)
    history.gate_the_bundle(action="hold", expires=False, i=0)
    history.gate_the_bundle(action="suspend", expires=False, i=0)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_record_kept_while_held_gives_up_what_other_bundles_took_over(history):
    """The parent kustomization's record, kept while a held app claimed some of its objects,
    went on listing the objects the other apps took over: later it froze them against their
    own bundles (`Frozen: would delete`), or kept objects the model prunes."""
    history.empty_or_restore(i=1)
    history.pause_folder(i=1)
    history.swallow_or_release()
    history.empty_or_restore(i=1)
    history.swallow_or_release()
    history.pause_folder(i=2)
    history.empty_or_restore(i=1)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_parent_taking_apps_in_again_does_not_prune_what_paused_apps_have(history):
    history.empty_or_restore(i=1)
    history.pause_folder(i=1)
    history.swallow_or_release()
    history.empty_or_restore(i=1)
    history.swallow_or_release()
    history.pause_folder(i=2)
    history.swallow_or_release()
    history.pause_folder(i=0)
    history.empty_or_restore(i=0)
    history.empty_or_restore(i=2)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_an_object_moved_out_of_a_suspended_bundle_stays_frozen_in_its_record(history):
    """A model slip the suite found: a suspended bundle keeps in its record what it no longer
    has in Git (its deletes wait for the suspension to lift), so an object moved out of it
    into an open bundle stays frozen for that bundle."""
    history.swallow_or_release()
    history.gate_the_team(action="hold", team="shop")
    history.gate_the_bundle(action="hold", expires=False, i=0)
    history.swallow_or_release()
    history.gate_the_bundle(action="suspend", expires=False, i=0)
    del history.repo.gates["n-apps"]
    history.step()
    history.move_object(dst=2, src=0)
    history.move(i=0, pause_moves=False, where="apps/a{i}")
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_dependent_waits_for_a_held_dependency_that_never_went_out(history):
    """gitgate wrote a bundle whose `dependsOn` named a held bundle that had never gone out
    (renamed under a `PAUSE`): only a dependency that failed stopped it."""
    history.pause_folder(i=1)
    history.rename(i=1, name="x")
    history.depend(i=0, j=1)
    history.the_cluster_holds_what_the_model_says_is_live()



def test_a_platform_override_on_an_emptied_paused_bundle_waits_with_it(history):
    """Found by the widened suite: a platform OverridePolicy added for a ConfigMap that only
    the record of a paused, emptied bundle has live is written at once."""
    history.pause_folder(i=2)
    history.empty_or_restore(i=2)
    history.override_from_platform(i=2, on=True)
    history.the_cluster_holds_what_the_model_says_is_live()




def test_a_suspend_gate_on_a_held_bundle_writes_nothing_of_it(history):
    """A hold gate pushed mid-pass stopped apps-a0 (its record says failed, not held); a
    suspend gate added next was written into its policy before rendering, though the hold
    gate holds it: the early suspension skipped only records that said held."""
    history.depend(i=2, j=None)
    history.relabel(i=0, team="shop")
    history.time_passes()
    history.rename(i=0, name=None)
    history.gate_the_team(action="hold", team="shop")
    history.lift_every_freeze()
    history.time_passes()
    history.change(i=0)
    history.push_mid_pass(action="hold", at=0, how="name", i=0)
    history.gate_the_team(action="suspend", team="shop")
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_suspend_gate_on_a_paused_bundle_stopped_mid_pass_writes_nothing_of_it(history):
    """The same with a `PAUSE` pushed mid-pass: the folder it is live from holds it."""
    history.relabel(i=0, team="shop")
    history.change(i=0)
    history.push_mid_pass(action="hold", at=0, how="pause", i=0)
    history.gate_the_team(action="suspend", team="shop")
    history.the_cluster_holds_what_the_model_says_is_live()


@pytest.mark.parametrize("dst", [
    pytest.param(2, id="moved-to-an-open-bundle"),
    pytest.param(0, id="moved-into-a-paused-bundle")])
def test_a_waiting_bundle_gives_up_what_another_bundle_took(history, dst):
    """apps-a1 waits (it depends on itself) while a1-c0 moves to another bundle, which writes
    it (apps-a2 at once; paused apps-a0 once the pause lifts). apps-a1's record, not written
    while it waited, went on listing a1-c0: a hold on apps-a1 then froze it against apps-a2
    (`Frozen`: would write ... live in bundle apps-a1), and a hold on apps-a0 made waiting
    apps-a1 fail `Frozen` (would delete a1-c0) instead of waiting for its dependency."""
    history.depend(i=0, j=None)
    history.depend(i=1, j=1)
    history.move(i=0, pause_moves=False, where="apps/a{i}")
    history.push_mid_pass(action="hold", at=0, how="name", i=0)
    history.lift_every_freeze()
    history.pause_folder(i=0)
    history.move(i=0, pause_moves=True, where="apps/a{i}")
    history.move_object(dst=dst, src=1)
    history.lift_every_freeze()
    history.gate_the_bundle(action="hold", expires=False, i=1)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_tenants_refused_override_leaves_the_approved_bundle_it_would_act_on_alone(history):
    """A tenant's ClusterOverridePolicy reaching out of its tenancy fails its bundle and is
    never written, yet it went into the digest of the app bundle it selects: the approved
    content no longer matched its approval, and the bundle was held again (a refused
    override would restart a rollout the same way)."""
    history.swallow_or_release()
    history.swallow_or_release()
    history.swallow_or_release()
    history.hold_and_approve(i=0)
    history.tenant_reaches_out(how="cluster-override")
    history.the_cluster_holds_what_the_model_says_is_live()


def test_an_approved_bundle_leaves_what_it_no_longer_has_to_the_bundle_that_took_it(history):
    """Found on Karmada: the parent kustomization's bundle `apps`, held by name and approved
    with its new content (app 0 moved out of it), applied as approved, yet what it still had
    live stayed frozen against the bundle app 0 became (`Frozen`: live in bundle apps, held
    by gates/n-apps.yaml): the approval let the content through but not the record."""
    history.hold_and_approve(i=0)
    history.swallow_or_release()
    history.depend(i=0, j=None)
    history.lift_every_freeze()
    history.hold_and_approve(i=0)
    history.move(i=0, pause_moves=False, where="other/a{i}")
    history.hold_and_approve(i=2)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_rollout_started_under_a_suspend_gate_is_not_halted_by_the_time_it_waited(history):
    """A bundle that gains rollout waves while a suspend gate stops it, and the gate expires
    hours later: its first wave goes out then, and the hours it waited under the gate count
    against no deadline (the record said halted)."""
    history.time_passes()
    history.time_passes()
    history.gate_the_bundle(action="suspend", expires=True, i=2)
    history.roll_out(i=2)
    history.time_passes()
    history.the_cluster_holds_what_the_model_says_is_live()


@pytest.mark.parametrize("steps", [
    pytest.param(((0, None), (2, "hold"), (0, "suspend")), id="renamed-back-suspended"),
    pytest.param(((0, "x"), (2, "hold"), (1, "suspend")), id="renamed-rolling-suspended")])
def test_approving_a_customized_rolling_bundle_after_its_object_moved(history, steps):
    """Found with GITGATE_PROPERTY_SEED=7, where the model was wrong: a rolling bundle whose
    later waves are not released yet is suspended there, so it deletes none of its templates
    until its last wave is out (README "Progressive rollouts", as for a suspend gate). Here
    its customization of an object that moved into another, frozen, bundle stays live (and
    member2 keeps running the customized value) until then; with every freeze lifted and
    the waves baked, it goes."""
    (renamed, name), (held, _), (suspended, _) = steps
    history.customize(i=1, on=True)
    history.hold_and_approve(i=1)
    history.change(i=0)
    history.swallow_or_release()
    history.health_flips(health="Unhealthy", i=0)
    history.swallow_or_release()
    history.gate_the_bundle(action="hold", expires=True, i=2 if name is None else 0)
    history.rename(i=renamed, name=name)
    history.move_object(dst=0, src=1)
    history.hold_and_approve(i=0 if name is None else 2)
    history.roll_out(i=1)
    history.gate_the_bundle(action="suspend", expires=False, i=suspended)
    history.gate_the_bundle(action="hold", expires=True, i=held)
    history.approve_bundle("apps-a1")
    history.the_cluster_holds_what_the_model_says_is_live()
    history.lift_every_freeze()
    for _ in range(4):
        history.time_passes()
    history.the_cluster_holds_what_the_model_says_is_live()
    assert not any(key.startswith("op/gitgate-apps-a1.configmap.a1-c0") for key in history.live())



@pytest.mark.parametrize("early", ["rename", "pause"])
def test_a_paused_bundle_that_never_went_out_stays_held_when_moved_out_of_its_folder(
        history, early):
    """Found with a history rule pausing `apps/` (the default seed's draws shifted); the model
    was wrong: app 0 (renamed `a0-y`) was never live, and held by `apps/a0/PAUSE` when it came
    back; moved to `other/a0`, the `PAUSE` left behind, it stays held (the model said open, or
    failed as frozen): gitgate keeps a held bundle's record of where and as what it was held,
    so a move does not lift a freeze."""
    history.rename(i=0, name=None)
    history.push_mid_pass(action="hold", at=14, how="name", i=1)
    if early == "pause":
        history.health_flips(health="Unhealthy", i=2)
        history.pause_folder(i=0)
    else:
        history.move_object(dst=0, src=0)
        history.time_passes()
        history.rename(i=2, name=None)
    history.health_flips(health="Healthy", i=1)
    history.move_object(dst=2, src=2)
    history.time_passes()
    history.empty_or_restore(i=0)
    history.pause_folder(i=1)
    history.rename(i=0, name="y")
    history.push_mid_pass(action="hold", at=8, how="pause", i=0)
    history.relabel(i=0, team="pay")
    history.health_flips(health="Healthy", i=2)
    history.empty_or_restore(i=0)
    history.move(i=0, pause_moves=False, where="other/a{i}")
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_rolling_bundle_losing_an_object_to_an_emptied_one(history):
    history.roll_out_and_bake(bakes=1, i=0, sick=False)
    history.empty_or_restore(i=1)
    history.move_object(dst=1, src=0)
    history.time_passes()
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_template_taken_from_a_bundle_waiting_on_its_dependency(history):
    """A rolling (so suspending) bundle took a template over from a bundle waiting on a
    dependency (a cycle): the waiting bundle's live policy kept claiming the template, so
    Karmada never showed the taking bundle's suspension on it and the pass failed
    (`SuspensionNotObserved`). A bundle whose render is known gives a template up even while
    it waits."""
    history.depend(i=1, j=1)
    history.roll_out(i=0)
    history.move_object(dst=0, src=1)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_an_approved_bundle_whose_rollout_halted_says_so_first(history):
    """An approved bundle whose rollout halted gave the approval as its first reason: the
    status said `approved` where the bundle stood halted. The reason that makes a bundle
    stand as it does (a halt, waves holding clusters back) comes first."""
    history.roll_out_and_bake(bakes=3, i=0, sick=True)
    history.hold_and_approve(i=0)
    history.time_passes()
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_rolling_bundle_renamed_while_it_waits_keeps_its_members_back(history):
    """A model slip the suite found: a rolling bundle renamed while it waits on a dependency
    (a cycle) writes nothing under its new name; its old record and policy go, and the
    templates its rollout had not released keep the binding they had, so the unreleased
    member goes on running the old version until the new name's own rollout releases it."""
    history.roll_out(i=0)
    history.depend(i=0, j=0)
    history.rename(i=0, name="x")
    history.the_cluster_holds_what_the_model_says_is_live()


def test_an_approved_bundle_suspended_by_its_live_label_gives_the_gate_first(history):
    """An approved bundle, relabelled, suspended by a team gate through the label its record
    says it is live under: the gate that suspends it came after the approval"s note, so the
    status led with `approved`. The freezes a bundle takes as it is live come first."""
    history.empty_or_restore(i=1)
    history.push_mid_pass(action="suspend", at=11, how="team", i=0)
    history.push_mid_pass(action="suspend", at=10, how="team", i=0)
    history.push_mid_pass(action="hold", at=1, how="team", i=0)
    history.gate_the_team(action="hold", team="shop")
    history.relabel(i=0, team="shop")
    history.approve_bundle("apps-a0")
    history.relabel(i=0, team=None)
    history.gate_the_team(action="hold", team="shop")
    history.gate_the_team(action="suspend", team="shop")
    history.approve_bundle("apps-a0")
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_template_taken_from_a_kept_parent_is_let_go_of(history):
    """A parent kustomization that left Git is kept while a paused app claims some of its
    objects; a rolling (so suspending) app took its other objects back, but the kept
    parent"s policy went on claiming them, and the app"s suspension never showed
    (`SuspensionNotObserved`). A bundle that left Git gives up what another takes, kept or
    not (it never deletes a policy it does not prune)."""
    history.roll_out_and_bake(bakes=1, i=0, sick=True)
    history.swallow_or_release()
    history.roll_out_and_bake(bakes=1, i=1, sick=True)
    history.move(i=1, pause_moves=False, where="other/a{i}")
    history.override_from_platform(i=2, on=True)
    history.rename(i=1, name="y")
    history.swallow_or_release()
    history.swallow_or_release()
    history.rename(i=2, name="x")
    history.override_from_platform(i=0, on=True)
    history.move(i=0, pause_moves=True, where="apps/a{i}/v2")
    history.override_from_platform(i=0, on=True)
    history.roll_out_and_bake(bakes=3, i=2, sick=True)
    history.pause_folder(i=0)
    history.swallow_or_release()
    history.the_cluster_holds_what_the_model_says_is_live()


def test_an_override_on_a_suspended_bundle_that_left_git_is_not_written(history):
    """A bundle suspended by a gate has its folder emptied; its record keeps it, suspended.
    An OverridePolicy the platform then adds for one of its objects was written: no pass
    writes that bundle any more, so none confirms its suspension. What acts on a suspended
    bundle that writes nothing (it left Git, or failed) stays as it is, as for a held one."""
    history.gate_the_bundle(action="suspend", expires=False, i=0)
    history.empty_or_restore(i=0)
    history.override_from_platform(i=0, on=True)
    history.the_cluster_holds_what_the_model_says_is_live()


def test_a_suspension_written_before_rendering_is_lifted_when_approved(history):
    """A team gate suspends app 1 (pushed mid-pass), a name gate holds it, and `approve` lets
    its content through both. Once the name gate is lifted, the suspension written before
    rendering reached its live policy; the pass, the bundle approved, took that policy for
    unchanged (its record still said it was not suspended), and member1 never got the next
    version. A policy written before rendering is written again from the plan."""
    history.relabel(i=1, team="shop")
    history.hold_and_approve(i=2)
    history.push_mid_pass(action="suspend", at=11, how="team", i=1)
    history.hold_and_approve(i=1)
    del history.repo.gates["n-apps-a1"]
    history.step()
    del history.repo.gates["t-shop"]
    history.step()
    history.push_mid_pass(action="hold", at=11, how="name", i=0)
    history.the_cluster_holds_what_the_model_says_is_live()
