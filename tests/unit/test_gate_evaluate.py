"""Table-driven gate evaluation: each case asserts the verdict and its reasons."""

from datetime import UTC, datetime, timedelta

import pytest

from gitgate.bundle.group import bundle_digest
from gitgate.gate.evaluate import evaluate
from gitgate.model import Action, Approval, Gate, InvalidGate, ReasonKind, Verdict, Window
from tests.support.objects import bundle, cm, deployment

NOW = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)  # a Wednesday


def gate(name, *patterns, action=Action.HOLD, until=None, clusters=(), labels=None,
         windows=(), approvals=()):
    return Gate(name, f"gates/{name}.yaml", f"because {name}", action, tuple(patterns),
                labels or {}, tuple(clusters), until, tuple(windows), tuple(approvals))


PAY = bundle("payments", deployment("api"), labels={"team": "pay"})
SHOP = bundle("shop/carts", deployment("carts"), labels={"team": "shop"})
BUNDLES = [PAY, SHOP]
FRIDAY = Window("0 18 * * 5", timedelta(hours=62), "Europe/Berlin")


CASES = [
    # (id, gates, invalid, now, bundle, verdict, [(kind, gate)], next_change)
    ("no-gate", [], [], NOW, "payments", Verdict.APPLY, [], None),
    ("until-not-passed", [gate("inc", "payments", until=NOW + timedelta(hours=2))], [], NOW,
     "payments", Verdict.HELD, [(ReasonKind.GATE, "inc")], NOW + timedelta(hours=2)),
    ("until-passed", [gate("inc", "payments", until=NOW - timedelta(seconds=1))], [], NOW,
     "payments", Verdict.APPLY, [], None),
    ("glob-covers-split-apps", [gate("g", "shop")], [], NOW, "shop/carts", Verdict.HELD,
     [(ReasonKind.GATE, "g")], None),
    ("label-selector", [gate("g", labels={"team": "pay"})], [], NOW, "payments", Verdict.HELD,
     [(ReasonKind.GATE, "g")], None),
    ("label-selector-other", [gate("g", labels={"team": "pay"})], [], NOW, "shop/carts",
     Verdict.APPLY, [], None),
    ("window-closed", [gate("w", "*", windows=[FRIDAY])], [], NOW, "payments", Verdict.APPLY,
     [], datetime(2026, 11, 20, 17, tzinfo=UTC)),
    ("window-open", [gate("w", "*", windows=[FRIDAY])], [],
     datetime(2026, 11, 21, 9, tzinfo=UTC), "payments", Verdict.HELD, [(ReasonKind.GATE, "w")],
     datetime(2026, 11, 23, 7, tzinfo=UTC)),
    ("overlapping-holds-all-listed", [gate("a", "pay*"), gate("b", "payments")], [], NOW,
     "payments", Verdict.HELD, [(ReasonKind.GATE, "a"), (ReasonKind.GATE, "b")], None),
    ("hold-beats-suspend", [gate("s", "payments", action=Action.SUSPEND), gate("h", "*")], [],
     NOW, "payments", Verdict.HELD, [(ReasonKind.GATE, "h"), (ReasonKind.GATE, "s")], None),
    ("suspend-all-clusters", [gate("s", "payments", action=Action.SUSPEND)], [], NOW,
     "payments", Verdict.SUSPENDED, [(ReasonKind.GATE, "s")], None),
    ("suspend-per-cluster", [gate("s", "payments", action=Action.SUSPEND,
                                  clusters=["member2"])], [], NOW, "payments",
     Verdict.SUSPENDED, [(ReasonKind.GATE, "s")], None),
    ("malformed-gate-holds-everything", [], [InvalidGate("gates/bad.yaml", "unknown field")],
     NOW, "shop/carts", Verdict.HELD, [(ReasonKind.INVALID_GATE, "gates/bad.yaml")], None),
    ("right-digest-approved", [gate("g", "payments", approvals=[
        Approval("payments", bundle_digest(PAY.objects, PAY.source.options))])], [], NOW,
     "payments", Verdict.APPLY, [(ReasonKind.APPROVED, "g")], None),
    ("other-digest-not-approved", [gate("g", "payments", approvals=[
        Approval("payments", "0" * 64)])], [], NOW, "payments", Verdict.HELD,
     [(ReasonKind.GATE, "g")], None),
    ("approval-for-other-bundle", [gate("g", "*", approvals=[
        Approval("shop/carts", bundle_digest(SHOP.objects))])], [], NOW, "payments",
     Verdict.HELD, [(ReasonKind.GATE, "g")], None),
]


@pytest.mark.parametrize("gates, invalid, now, name, verdict, reasons, next_change",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gate_evaluation(gates, invalid, now, name, verdict, reasons, next_change):
    result = evaluate(BUNDLES, gates, invalid, now)[name]
    assert result.verdict is verdict
    assert sorted((r.kind, r.gate) for r in result.reasons) == sorted(reasons)
    assert result.next_change == next_change
    for reason in result.reasons:
        assert reason.reason and reason.file


def test_per_cluster_suspend_lists_clusters_and_mixed_suspend_means_all():
    one = evaluate(BUNDLES, [gate("a", "payments", action=Action.SUSPEND, clusters=["m2"]),
                             gate("b", "payments", action=Action.SUSPEND, clusters=["m3"])],
                   [], NOW)["payments"]
    assert one.suspend_clusters == ("m2", "m3")
    mixed = evaluate(BUNDLES, [gate("a", "payments", action=Action.SUSPEND, clusters=["m2"]),
                               gate("b", "payments", action=Action.SUSPEND)], [], NOW)["payments"]
    assert mixed.suspend_clusters is None


@pytest.mark.parametrize("label", ["gitgate.io/paused", "work.karmada.io/paused"])
def test_pause_label_on_any_object_holds_the_bundle(label):
    paused = bundle("app", deployment("web"), cm("settings", labels={label: "true"}))
    result = evaluate([paused], [], [], NOW)["app"]
    assert result.verdict is Verdict.HELD
    (reason,) = result.reasons
    assert reason.kind is ReasonKind.LABEL and "ConfigMap ns/settings" in reason.reason


def test_pause_label_false_does_not_hold():
    result = evaluate([bundle("app", cm("s", labels={"gitgate.io/paused": "false"}))], [], [],
                      NOW)
    assert result["app"].verdict is Verdict.APPLY


def test_pause_file_holds_with_its_text():
    held = bundle("app", cm("x"), pause="INC-7 debugging")
    result = evaluate([held], [], [], NOW)["app"]
    assert result.verdict is Verdict.HELD
    assert [(r.kind, r.file, r.reason) for r in result.reasons] == [
        (ReasonKind.PAUSE_FILE, "app/PAUSE", "INC-7 debugging")]


def test_failed_bundle_is_failed_whatever_the_gates():
    from dataclasses import replace

    from gitgate.model import Problem
    broken = replace(PAY, objects=(), problems=(Problem("payments", "bad yaml", "a.yaml", 3),))
    result = evaluate([broken], [gate("g", "*")], [], NOW)["payments"]
    assert result.verdict is Verdict.FAILED and result.reasons[0].file == "a.yaml"
