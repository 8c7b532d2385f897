"""`progression.livefreeze` over plain data: a freeze binds to the name, labels, folder and
objects a bundle has live (its record), not only to what the commit calls it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from gitgate.gate.spec import parse_gates
from gitgate.model import Action, InvalidGate, ObjectRef, ReasonKind, Verdict
from gitgate.plan import make_plan
from gitgate.progression.latefreeze import (
    Identity,
    NewerFreezes,
    late_freezes,
    merged,
    stopped_with,
)
from gitgate.progression.livefreeze import with_live_freezes
from tests.support.objects import bundle, cm, deployment, source

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    bundle: str
    source: str
    refs: tuple[ObjectRef, ...]
    labels: tuple[tuple[str, str], ...] = ()
    extra: dict = field(default_factory=dict)

    def by_ref(self):
        return dict.fromkeys(self.refs)


def ref(name: str) -> ObjectRef:
    return ObjectRef("", "ConfigMap", "ns", name)


def gate_text(name: str, spec: str) -> str:
    return (f"apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {{name: {name}}}\n"
            f"spec: {{{spec}, reason: freeze {name}}}\n")


def plan_of(bundles, gates=None):
    from gitgate.model import RenderedSource

    rendered = tuple(RenderedSource(b.source, b.objects) for b in bundles)
    return make_plan(rendered, {f"gates/{k}.yaml": v for k, v in (gates or {}).items()},
                     NOW, "rev2")


def verdicts(plan):
    return {b.bundle.name: b.verdict for b in plan.bundles}


WEB = Record("web", "apps/web", (ref("web"), ref("web-extra")), (("team", "shop"),))


def test_nothing_frozen_leaves_the_plan_as_it_is():
    plan = plan_of([bundle("web", cm("web"))])
    assert with_live_freezes(plan, {"web": WEB}, {}) is plan


def test_a_renamed_bundle_writing_a_held_records_objects_fails_naming_all_three():
    renamed = bundle("web2", cm("web"), cm("web-extra"), src=source("apps/web", name="web2"))
    plan = with_live_freezes(plan_of([renamed], {"g": gate_text("g", "bundles: [web]")}),
                             {"web": WEB}, {})
    verdict = verdicts(plan)["web2"]
    assert verdict.verdict is Verdict.FAILED
    first = verdict.reasons[0]
    assert first.kind is ReasonKind.FROZEN and first.target == ref("web")
    assert "gates/g.yaml" in first.reason and "bundle web" in first.reason
    assert plan.bundles[0].desired == () and plan.bundles[0].policies == ()
    assert plan.live_holds["web"][0].file == "gates/g.yaml"


def test_a_bundle_whose_recorded_labels_a_gate_selects_is_held_with_its_new_labels():
    relabelled = bundle("web", cm("web"), labels={"team": "none"},
                        src=source("apps/web", name="web", labels={"team": "none"}))
    plan = with_live_freezes(plan_of([relabelled], {
        "g": gate_text("g", "selector: {matchLabels: {team: shop}}")}), {"web": WEB}, {})
    verdict = verdicts(plan)["web"]
    assert verdict.verdict is Verdict.HELD and "team=shop" in verdict.reasons[0].reason


def test_a_suspend_gate_on_the_recorded_name_suspends_the_same_bundle_on_its_clusters():
    relabelled = bundle("web", cm("web"), src=source("apps/web", name="web"))
    plan = with_live_freezes(plan_of([relabelled], {"g": gate_text(
        "g", "selector: {matchLabels: {team: shop}}, action: suspend, clusters: [member2]")}),
        {"web": WEB}, {})
    verdict = verdicts(plan)["web"]
    assert verdict.verdict is Verdict.SUSPENDED and verdict.suspend_clusters == ("member2",)
    assert verdict.reasons[0].action is Action.SUSPEND


def test_a_pause_file_left_in_an_emptied_folder_keeps_the_gone_bundle():
    plan = with_live_freezes(plan_of([bundle("api", cm("api"))]), {"web": WEB},
                             {"apps/web": "incident 42"})
    assert plan.live_holds["web"][0].file == "apps/web/PAUSE"
    assert "incident 42" in plan.live_holds["web"][0].reason


def test_a_held_bundle_that_now_claims_a_gone_records_objects_keeps_them_live():
    moved = bundle("web-v2", cm("web"), cm("web-extra"), pause="moved with its PAUSE",
                   src=source("apps/web/v2", name="web-v2", pause="moved with its PAUSE"))
    plan = with_live_freezes(plan_of([moved]), {"web": WEB}, {"apps/web/v2": "x"})
    assert verdicts(plan)["web-v2"].verdict is Verdict.HELD
    assert "claimed now by bundle web-v2" in plan.live_holds["web"][0].reason


def test_an_open_bundle_pruning_an_object_a_held_bundle_claims_fails():
    api = Record("api", "apps/api", (ref("api"), ref("moved")))
    plan = with_live_freezes(plan_of([
        bundle("api", cm("api")), bundle("web", cm("web"), cm("moved"), pause="frozen",
                                         src=source("apps/web", name="web", pause="frozen"))]),
        {"api": api, "web": WEB}, {"apps/web": "frozen"})
    verdict = verdicts(plan)["api"]
    assert verdict.verdict is Verdict.FAILED and "would delete" in verdict.reasons[0].reason


def test_a_gone_bundle_whose_objects_a_failed_bundle_still_has_is_not_pruned():
    parent = bundle("apps", cm("web"), cm("api"), src=source("apps", name="apps"))
    api = Record("api", "apps/api", (ref("api"),))
    plan = with_live_freezes(plan_of([parent]), {"web": WEB, "api": api},
                             {"apps/web": "frozen"})
    assert verdicts(plan)["apps"].verdict is Verdict.FAILED
    assert "apps" in plan.live_holds["api"][0].reason


def test_an_approval_of_the_current_content_still_lets_it_through():
    web = bundle("web", cm("web"), src=source("apps/web", name="web"))
    digest = verdicts(plan_of([web]))["web"].digest
    plan = plan_of([web], {"g": gate_text(
        "g", f"bundles: [web], approve: [{{bundle: web, digest: '{digest}'}}]")})
    assert verdicts(plan)["web"].verdict is Verdict.APPLY
    assert verdicts(with_live_freezes(plan, {"web": WEB}, {}))["web"].verdict is Verdict.APPLY


# ------------------------------------------------------------------ freezes of a newer commit
def gates_of(**texts):
    gates, invalid = parse_gates({f"gates/{k}.yaml": v for k, v in texts.items()})
    assert not invalid, invalid
    return tuple(gates)


WEB_NOW = Identity(("web2",), ({"team": "none"}, {"team": "shop"}), ("apps/web2", "apps/web"))


def test_a_newer_gate_stops_a_bundle_by_the_labels_it_is_live_under():
    plan = plan_of([bundle("web2", cm("web"))])
    newer = NewerFreezes("c2", gates_of(g=gate_text("g", "selector: {matchLabels: {team: shop}}")))
    why = late_freezes(newer, plan, NOW).stops(WEB_NOW)
    assert why is not None and why.file == "gates/g.yaml"


def test_a_gate_the_pass_already_has_stops_nothing_mid_pass():
    text = gate_text("g", "bundles: [web2]")
    plan = plan_of([bundle("web2", cm("web"))], {"g": text})
    assert late_freezes(NewerFreezes("c2", gates_of(g=text)), plan, NOW).stops(WEB_NOW) is None


def test_a_new_pause_file_or_an_unreadable_gate_file_stops_it():
    plan = plan_of([bundle("web2", cm("web"))])
    assert late_freezes(NewerFreezes("c2", pauses={"apps/web": "x"}), plan, NOW).stops(WEB_NOW)
    above = late_freezes(NewerFreezes("c2", pauses={"apps": "x"}), plan, NOW).stops(WEB_NOW)
    assert above is not None and above.file == "apps/PAUSE"
    assert late_freezes(NewerFreezes("c2", pauses={"app": "x"}), plan, NOW).stops(WEB_NOW) is None
    bad = NewerFreezes("c2", invalid=(InvalidGate("gates/bad.yaml", "unknown field"),))
    assert late_freezes(bad, plan, NOW).stops(WEB_NOW).file == "gates/bad.yaml"


def test_an_approval_of_the_bundles_content_lets_it_through_mid_pass():
    plan = plan_of([bundle("web2", cm("web"))])
    who = Identity(("web2",), ({},), ("apps/web2",), digest="d" * 64)
    newer = NewerFreezes("c2", gates_of(g=gate_text(
        "g", f"bundles: [web2], approve: [{{bundle: web2, digest: '{'d' * 64}'}}]")))
    assert late_freezes(newer, plan, NOW).stops(who) is None


def test_freezes_of_several_newer_commits_add_up_and_a_later_lift_drops_none():
    first = NewerFreezes("c2", gates_of(g=gate_text("g", "bundles: [web2]")), (),
                         {"apps/a": "x"})
    lifted = NewerFreezes("c3", (), (), {})
    both = merged([first, lifted])
    assert both.revision == "c3" and [g.name for g in both.gates] == ["g"]
    assert both.pauses == {"apps/a": "x"}


def test_a_freeze_of_a_bundle_also_stops_what_acts_on_it_and_what_its_workload_uses():
    web = bundle("web", deployment("web", configmaps=["settings"]))
    config = bundle("config", cm("settings"), cm("other"))
    assert stopped_with(plan_of([web, config])) == {"config": ("web",)}
