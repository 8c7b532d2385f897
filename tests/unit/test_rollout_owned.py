"""A rollout's step decides which clusters stay suspended, nothing else: under every step the
bundle plans the objects and policies it plans without a rollout (its repo overrides, its
generated PropagationPolicies and per-cluster OverridePolicies), the same but for the
suspension its propagation policies carry. Pure: plans over plain data."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from gitgate.karmada.policy import is_policy
from gitgate.karmada.waves import RolloutState
from gitgate.model import (
    BundleOptions,
    Manifest,
    ObjectRef,
    RenderedSource,
    Source,
    SourceKind,
    Verdict,
)
from gitgate.model.clusterspec import ObjectOverride, OverrideRule
from gitgate.model.rolloutspec import Members, RolloutSpec, named_waves
from gitgate.plan import BundlePlan, Plan, make_plan
from gitgate.progression.record import Progression
from gitgate.progression.rollouts import with_rollouts
from tests.support.objects import cm, deployment

T0 = datetime(2026, 11, 22, 12, tzinfo=UTC)
PLACEMENT = {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]}}
SPEC = RolloutSpec(named_waves(("member1",), ("member2",)), bake=timedelta(seconds=5),
                   progress_deadline=timedelta(seconds=20))
MEMBERS = Members({"member1": {}, "member2": {}, "member3": {}})
WEB = ObjectRef("apps", "Deployment", "ns", "web")
REPO_OVERRIDE = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
                 "metadata": {"name": "web-image", "namespace": "ns"},
                 "spec": {"resourceSelectors": [{"apiVersion": "apps/v1",
                                                 "kind": "Deployment", "name": "web"}],
                          "overrideRules": [{"targetCluster": {"clusterNames": ["member2"]},
                                             "overriders": {"plaintext": []}}]}}


def replicas(clusters: str, count: int, entry: int) -> OverrideRule:
    return OverrideRule({"clusterNames": [clusters]},
                        ({"path": "/spec/replicas", "operator": "add", "value": count},), entry)


CUSTOMIZED = (ObjectOverride(WEB, "apps/v1", (replicas("member1", 2, 1),
                                              replicas("member2", 3, 2))),)


def web(rollout: RolloutSpec | None = SPEC) -> RenderedSource:
    options = BundleOptions(namespace="ns", placement=PLACEMENT, rollout=rollout)
    return RenderedSource(Source("apps/web", SourceKind.RAW, options, "web"),
                          (cm("web-config"), deployment("web"), REPO_OVERRIDE),
                          overrides=CUSTOMIZED)


@dataclass(frozen=True)
class Record:
    bundle: str = "web"
    applied_digest: str = "older"
    progression: Progression = field(default_factory=Progression)

    def by_ref(self) -> dict[ObjectRef, object]:
        return {}


def gate(clusters: str) -> dict[str, str | None]:
    return {"gates/web.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                              "metadata: {name: web}\nspec: {bundles: [web], action: suspend, "
                              f"reason: maintenance{clusters}}}\n"}


def without_suspension(obj: Manifest) -> Manifest:
    out = copy.deepcopy(obj)
    if is_policy(out):
        out.get("spec", {}).pop("suspension", None)
    return out


def owned(item: BundlePlan) -> dict[ObjectRef, Manifest]:
    return {ObjectRef.of(o): without_suspension(o) for o in (*item.desired, *item.policies)}


def suspensions(item: BundlePlan) -> set[str]:
    return {repr(o.get("spec", {}).get("suspension")) for o in (*item.desired, *item.policies)
            if is_policy(o)}


def rolled(plan: Plan, record: Record | None) -> BundlePlan:
    inventories = {"web": record} if record is not None else {}
    return with_rollouts(plan, inventories, {}, T0 + timedelta(seconds=1), MEMBERS).bundles[0]


def halted(digest: str) -> Record:
    state = RolloutState(digest, 0, T0, halted="not ready within progressDeadline 20s")
    return Record(progression=Progression(rollout=state.to_json()))


STEPS = {
    "a new version at wave 1": lambda digest: Record(),
    "a new bundle": lambda digest: None,
    "halted": halted,
    "wave 2 released": lambda digest: Record(progression=Progression(
        rollout=RolloutState(digest, 1, T0).to_json())),
}


@pytest.mark.parametrize("gates", [{}, gate(", clusters: [member2]"),
                                   gate(", clusters: [member3]"), gate("")],
                         ids=["no gate", "gate on member2", "gate on member3", "gate on all"])
@pytest.mark.parametrize("step", list(STEPS))
def test_every_step_keeps_what_the_bundle_owns(step, gates):
    plan = make_plan((web(),), gates, T0, "rev1")
    item = plan.bundles[0]
    unrolled = make_plan((web(None),), gates, T0, "rev1").bundles[0]
    assert any(ObjectRef.of(p).kind == "OverridePolicy" and p is not REPO_OVERRIDE
               for p in unrolled.policies)  # the generated one, for `clusters:`
    after = rolled(plan, STEPS[step](item.verdict.digest))
    assert after.verdict.verdict in (Verdict.SUSPENDED, Verdict.HALTED, Verdict.APPLY)
    assert owned(after) == owned(unrolled)
    assert len(suspensions(after)) == 1  # every propagation policy says the same


def test_the_suspension_follows_the_rollout():
    plan = make_plan((web(),), {}, T0, "rev1")
    after = rolled(plan, Record())
    assert after.verdict.suspend_clusters == ("member2", "member3")
    assert suspensions(after) == {repr({"dispatchingOnClusters": {
        "clusterNames": ["member2", "member3"]}})}


def test_a_step_that_changes_no_suspension_keeps_the_objects_themselves():
    plan = make_plan((web(),), {}, T0, "rev1")
    item = plan.bundles[0]
    done = Record(progression=Progression(
        rollout=RolloutState(item.verdict.digest, 2, T0).to_json()))
    after = rolled(plan, done)
    assert after.verdict.verdict is Verdict.APPLY
    assert after.desired is item.desired and after.policies is item.policies


def test_a_plan_with_nothing_to_write_still_writes_nothing():
    """Another replica's bundle (`run --shard`) is judged, never written from here."""
    plan = make_plan((web(),), {}, T0, "rev1", mine=lambda name: False)
    after = rolled(plan, Record())
    assert after.verdict.verdict is Verdict.SUSPENDED
    assert (after.desired, after.policies) == ((), ())


def test_with_verdict_keeps_where_the_progression_is():
    from gitgate.plan import with_verdict

    item = make_plan((web(),), {}, T0, "rev1").bundles[0]
    item = replace(item, kept=(WEB,))
    halted_verdict = replace(item.verdict, verdict=Verdict.HALTED, suspend_clusters=("member3",))
    after = with_verdict(item, halted_verdict)
    assert after.kept == (WEB,) and after.verdict is halted_verdict
    assert owned(after) == owned(item)
