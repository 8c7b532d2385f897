"""The rollout state machine on plain data with explicit times: every transition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gitgate.apply.inventory import Entry, Inventory
from gitgate.karmada.dispatch import ClusterState, Health, Version
from gitgate.karmada.waves import RolloutSpec, RolloutState, step
from gitgate.model.rolloutspec import ClusterSelector, Requirement, Wave, named_waves
from gitgate.passes.clusterview import in_git

T0 = datetime(2026, 11, 22, 12, tzinfo=UTC)
SPEC = RolloutSpec(named_waves(("member1",), ("member2",)), bake=timedelta(seconds=5),
                   progress_deadline=timedelta(seconds=20))


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def ready(name: str) -> ClusterState:
    return ClusterState(name, True, True, Health.HEALTHY, False, Version.CURRENT)


def sick(name: str, health: Health = Health.UNHEALTHY, *, suspended=False,
         version=Version.CURRENT) -> ClusterState:
    return ClusterState(name, True, True, health, suspended, version,
                        f"Deployment.apps shop/web is {health} on {name}")


def clusters(*states: ClusterState) -> dict[str, ClusterState]:
    return {s.name: s for s in states}


def test_unchanged_content_has_nothing_to_roll_out():
    done = step(SPEC, None, "d1", "d1", clusters(ready("member1"), ready("member2")), T0)
    assert done.state.complete(SPEC) and done.suspend == () and done.next_check is None


def test_a_new_digest_releases_wave_1_and_suspends_the_rest():
    first = step(SPEC, None, "d0", "d1", clusters(ready("member1"), ready("member2")), T0)
    assert (first.state.wave, first.suspend) == (0, ("member2",))
    assert first.next_check == at(5) and "released" in first.waiting_for
    # what Karmada reported predates this pass's writes: never baked on it
    assert first.state.healthy_since is None


def test_waves_advance_after_bake_and_complete():
    s = step(SPEC, None, "d0", "d1", {}, T0).state
    waiting = step(SPEC, s, "d1", "d1", clusters(sick("member1"), sick(
        "member2", suspended=True, version=Version.BEHIND)), at(3))
    assert waiting.suspend == ("member2",) and waiting.state.healthy_since is None
    assert waiting.next_check == at(8)  # polls, well before the deadline at 23 s
    assert "waiting for member1: Deployment.apps shop/web is Unhealthy" in waiting.waiting_for
    baking = step(SPEC, waiting.state, "d1", "d1", clusters(ready("member1")), at(6))
    assert baking.state.healthy_since == at(6) and baking.next_check == at(11)
    still = step(SPEC, baking.state, "d1", "d1", clusters(ready("member1")), at(9))
    assert still.state.wave == 0 and still.suspend == ("member2",)
    wave2 = step(SPEC, still.state, "d1", "d1", clusters(ready("member1")), at(11))
    assert (wave2.state.wave, wave2.suspend) == (1, ())  # member2 released
    assert "released" in wave2.waiting_for
    late = step(SPEC, wave2.state, "d1", "d1", clusters(ready("member1"), sick("member2")),
                at(14))
    assert late.state.wave == 1 and not late.halted
    healthy = step(SPEC, late.state, "d1", "d1", clusters(ready("member1"), ready("member2")),
                   at(15))
    done = step(SPEC, healthy.state, "d1", "d1", clusters(ready("member1"), ready("member2")),
                at(20))
    assert done.state.complete(SPEC) and done.suspend == () and done.waiting_for == "rolled out"


def test_a_missed_progress_deadline_halts_and_stays_halted():
    s = step(SPEC, None, "d0", "d1", {}, T0).state
    halted = step(SPEC, s, "d1", "d1", clusters(sick("member1")), at(20))
    assert halted.halted and halted.suspend == ("member2",)
    assert halted.state.halted == ("not ready within progressDeadline 20s: member1: "
                                   "Deployment.apps shop/web is Unhealthy on member1")
    # healthy later: still halted until a new commit or a resume
    again = step(SPEC, halted.state, "d1", "d1", clusters(ready("member1")), at(60))
    assert again.halted and again.suspend == ("member2",) and again.next_check is None


def test_turning_unhealthy_while_baking_halts_at_once():
    s = step(SPEC, None, "d0", "d1", {}, T0).state
    baking = step(SPEC, s, "d1", "d1", clusters(ready("member1")), at(2))
    halted = step(SPEC, baking.state, "d1", "d1", clusters(sick("member1")), at(4))
    assert halted.halted and "turned Unhealthy while baking" in halted.state.halted


def test_on_failure_continue_passes_over_a_failed_wave():
    spec = RolloutSpec(SPEC.waves, SPEC.bake, SPEC.progress_deadline, "continue")
    s = step(spec, None, "d0", "d1", {}, T0).state
    moved = step(spec, s, "d1", "d1", clusters(sick("member1")), at(20))
    assert not moved.halted and (moved.state.wave, moved.suspend) == (1, ())


def test_a_new_commit_mid_rollout_starts_again_from_wave_1():
    s = step(SPEC, None, "d0", "d1", {}, T0).state
    s = step(SPEC, s, "d1", "d1", clusters(ready("member1")), at(2)).state
    s = step(SPEC, s, "d1", "d1", clusters(ready("member1")), at(7)).state
    assert s.wave == 1
    restarted = step(SPEC, s, "d1", "d2", clusters(ready("member1"), ready("member2")), at(8))
    assert (restarted.state.digest, restarted.state.wave) == ("d2", 0)
    assert restarted.suspend == ("member2",)
    # a halted rollout is left behind by a new commit as well
    halted = step(SPEC, s, "d1", "d1", clusters(ready("member1"), sick("member2")), at(40))
    assert halted.halted
    fresh = step(SPEC, halted.state, "d1", "d3", {}, at(41))
    assert not fresh.halted and fresh.state.wave == 0


def test_a_gate_mid_wave_stops_the_rollout_and_its_timers_restart_when_it_lifts():
    s = step(SPEC, None, "d0", "d1", {}, T0).state
    gated = step(SPEC, s, "d1", "d1", clusters(sick("member1")), at(15), gated=True)
    assert gated.suspend == ("member2",) and "stopped by a gate" in gated.waiting_for
    assert gated.next_check is None and gated.state.started == at(15)
    # lifted at 30 s: the wave goes out then, its deadline (20 s) counting from the lift
    lifted = step(SPEC, gated.state, "d1", "d1", clusters(sick("member1")), at(30))
    assert not lifted.halted and lifted.next_check == at(35)
    assert "released" in lifted.waiting_for and lifted.state.started == at(30)
    assert not step(SPEC, lifted.state, "d1", "d1", clusters(sick("member1")), at(49)).halted
    assert step(SPEC, lifted.state, "d1", "d1", clusters(sick("member1")), at(50)).halted


def test_the_hours_a_suspend_gate_held_a_new_wave_count_against_no_deadline():
    s = step(SPEC, None, "d0", "d1", {}, T0, gated=True).state
    held = step(SPEC, s, "d1", "d1", clusters(sick("member1")), at(3600), gated=True)
    assert held.state.gated
    lifted = step(SPEC, held.state, "d1", "d1", clusters(sick("member1")), at(7200))
    assert not lifted.halted and not lifted.state.gated
    assert RolloutState.from_json(held.state.to_json()) == held.state  # kept across passes


def test_clusters_outside_every_wave_wait_for_the_last():
    spec = RolloutSpec(named_waves(("member1",)), SPEC.bake, SPEC.progress_deadline)
    first = step(spec, None, "d0", "d1", clusters(ready("member1"), ready("member3")), T0)
    assert first.suspend == ("member3",)


def test_the_state_survives_its_text_form():
    state = RolloutState("d1", 1, at(3), at(4), "")
    assert RolloutState.from_json(state.to_json()) == state
    assert RolloutState.from_json("{not json") is None and RolloutState.from_json("") is None


def test_a_gate_takes_over_a_halt_and_lifting_it_continues_the_wave():
    s = step(SPEC, None, "d0", "d1", {}, T0).state
    halted = step(SPEC, s, "d1", "d1", clusters(sick("member1")), at(20))
    assert halted.halted
    gated = step(SPEC, halted.state, "d1", "d1", clusters(sick("member1")), at(30), gated=True)
    assert not gated.halted and gated.suspend == ("member2",)
    lifted = step(SPEC, gated.state, "d1", "d1", clusters(ready("member1")), at(40))
    assert not lifted.halted and lifted.state.healthy_since is None  # released at the lift
    baking = step(SPEC, lifted.state, "d1", "d1", clusters(ready("member1")), at(45))
    assert not baking.halted and baking.state.healthy_since == at(45)


CANARY = ClusterSelector((("stage", "canary"),))
MAIN = ClusterSelector(match_expressions=(Requirement("stage", "In", ("main", "late")),))
MEMBERS = {"member1": {"stage": "canary"}, "member2": {"stage": "main"},
           "member3": {"stage": "late"}, "member4": {}}


def test_label_selectors_resolve_to_the_member_clusters_they_match():
    spec = RolloutSpec((Wave(selector=CANARY), Wave(selector=MAIN)), SPEC.bake,
                       SPEC.progress_deadline).resolved(MEMBERS)
    assert [w.clusters for w in spec.waves] == [("member1",), ("member2", "member3")]
    assert spec.waves[0].text() == "stage=canary: member1"
    # a cluster named by a later wave stays there; one in no wave is released last
    named = RolloutSpec((Wave(selector=MAIN), Wave(("member3",))), SPEC.bake,
                        SPEC.progress_deadline).resolved(MEMBERS)
    assert [w.clusters for w in named.waves] == [("member2",), ("member3",)]
    first = step(named, None, "d0", "d1", {}, T0, known=tuple(MEMBERS))
    assert first.suspend == ("member1", "member3", "member4")


def test_selector_operators():
    labels = {"stage": "main", "zone": "a"}
    assert Requirement("zone", "Exists").matches(labels)
    assert not Requirement("zone", "DoesNotExist").matches(labels)
    assert Requirement("stage", "NotIn", ("canary",)).matches(labels)
    assert not Requirement("stage", "NotIn", ("main",)).matches(labels)
    assert Requirement("team", "NotIn", ("x",)).matches(labels)  # as Kubernetes: absent key
    assert not ClusterSelector((("stage", "main"),),
                               (Requirement("zone", "In", ("b",)),)).matches(labels)


def test_a_wave_whose_selector_matches_no_cluster_is_passed_over():
    spec = RolloutSpec((Wave(selector=CANARY), Wave(("member2",))), SPEC.bake,
                       SPEC.progress_deadline).resolved({"member2": {}})
    first = step(spec, None, "d0", "d1", {}, T0, known=("member2",))
    assert first.state.wave == 1 and first.suspend == ()


def test_a_retry_request_restarts_a_halted_wave_once():
    s = step(SPEC, None, "d0", "d1", {}, T0).state
    halted = step(SPEC, s, "d1", "d1", clusters(sick("member1")), at(20)).state
    assert halted.halted
    # a request older than the wave's start is spent: still halted
    assert step(SPEC, halted, "d1", "d1", clusters(sick("member1")), at(25),
                retry=at(-1)).halted
    retried = step(SPEC, halted, "d1", "d1", clusters(sick("member1")), at(30), retry=at(28))
    assert not retried.halted and retried.state.started == at(30)
    assert retried.suspend == ("member2",) and retried.next_check == at(35)
    # the same request does not lift the next halt
    again = step(SPEC, retried.state, "d1", "d1", clusters(sick("member1")), at(50),
                 retry=at(28))
    assert again.halted
    assert step(SPEC, again.state, "d1", "d1", clusters(sick("member1")), at(55),
                retry=at(28)).halted


def test_selector_waves_hold_the_bundle_when_the_member_clusters_cannot_be_read():
    from gitgate.model import BundleOptions, RenderedSource, Source, SourceKind, Verdict
    from gitgate.model.rolloutspec import Members
    from gitgate.plan import make_plan
    from gitgate.progression.rollouts import with_rollouts
    from tests.support.objects import deployment

    spec = RolloutSpec((Wave(selector=CANARY), Wave(("member2",))), SPEC.bake,
                       SPEC.progress_deadline)
    source = RenderedSource(Source("apps/web", SourceKind.RAW,
                                   BundleOptions(namespace="ns", rollout=spec), "web"),
                            (deployment("web"),))
    plan = make_plan((source,), {}, T0, "rev1")
    held = with_rollouts(plan, {}, {}, T0, Members(error="403 Forbidden"))
    verdict = held.bundles[0].verdict
    assert verdict.verdict is Verdict.HELD and held.bundles[0].rollout is None
    assert "cannot tell which member clusters" in verdict.reasons[-1].reason
    assert "403 Forbidden" in verdict.reasons[-1].reason
    # readable: wave 1 is released, member2 waits
    rolling = with_rollouts(plan, {}, {}, T0, Members({"member1": {"stage": "canary"},
                                                      "member2": {}}))
    assert rolling.bundles[0].verdict.verdict is Verdict.SUSPENDED
    assert rolling.bundles[0].verdict.suspend_clusters == ("member2",)


def test_a_rollout_judges_what_the_bundle_still_has_in_git():
    """An object that left Git waits, live, for the last wave before it is deleted; it is not
    part of the version rolled out, so its state on a member neither holds a wave back nor
    halts it. An object still in Git (with or without a namespace) is judged."""
    left = Entry("apps/v1", "Deployment", "shop", "old", "h1")
    kept = Entry("apps/v1", "Deployment", "shop", "web", "h2")
    scoped = Entry("rbac.authorization.k8s.io/v1", "ClusterRole", "", "web", "h3")
    inventory = Inventory("shop", (left, kept, scoped))
    rendered = [{"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "web", "namespace": "shop"}},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "web"}},
                {"apiVersion": "v1", "kind": "ConfigMap",  # new: not live yet
                 "metadata": {"name": "fresh", "namespace": "shop"}}]
    judged = in_git(inventory, rendered)
    assert judged.entries == (kept, scoped) and judged.bundle == "shop"
    assert in_git(inventory, []).entries == ()


def test_a_rollout_judges_a_leftover_its_own_policies_may_still_select():
    """A leftover a propagation policy of the bundle still selects goes to each cluster a
    wave releases: it is judged. A label selector is taken to select it (the live labels
    are not known); a policy naming other objects, or another kind, does not."""
    left = Entry("apps/v1", "Deployment", "shop", "old", "h1")
    other = Entry("v1", "ConfigMap", "shop", "gone", "h2")
    inventory = Inventory("shop", (left, other))

    def pp(*selectors):
        return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                "metadata": {"name": "shop", "namespace": "shop"},
                "spec": {"resourceSelectors": list(selectors)}}

    named = pp({"apiVersion": "apps/v1", "kind": "Deployment", "name": "old"})
    by_labels = pp({"apiVersion": "apps/v1", "kind": "Deployment",
                    "labelSelector": {"matchLabels": {"app": "shop"}}})
    elsewhere = pp({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    assert in_git(inventory, [named]).entries == (left,)  # the bundle's own policy
    assert in_git(inventory, [], [by_labels]).entries == (left,)  # a generated one
    assert in_git(inventory, [elsewhere]).entries == ()
    other_ns = {**named, "metadata": {"name": "shop", "namespace": "web"}}
    assert in_git(inventory, [other_ns]).entries == ()


def test_a_wave_with_nothing_to_judge_only_bakes():
    """A bundle emptied in Git: Karmada reports nothing of it, and nothing is awaited."""
    s = step(SPEC, None, "d0", "d1", {}, T0, nothing_to_judge=True).state
    waiting = step(SPEC, s, "d1", "d1", {}, at(1))
    assert waiting.suspend == ("member2",) and "reports nothing yet" in waiting.waiting_for
    baking = step(SPEC, s, "d1", "d1", {}, at(1), nothing_to_judge=True)
    assert baking.state.healthy_since == at(1) and baking.suspend == ("member2",)
    wave2 = step(SPEC, baking.state, "d1", "d1", {}, at(7), nothing_to_judge=True)
    assert wave2.state.wave == 1 and wave2.suspend == ()
