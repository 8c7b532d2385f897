"""Which gates `gitgate resume` removes and which it names and leaves: plain gates and bundles
in, edits and refusals out."""

from __future__ import annotations

from datetime import timedelta

from gitgate.gate.evaluate import GateState
from gitgate.gitops.resume import resume_edits
from gitgate.model import Action, Gate, Window
from tests.support.objects import bundle

CARTS, ORDERS, GUESTBOOK = bundle("shop/carts"), bundle("shop/orders"), bundle("guestbook")


def state(gate: Gate, *covers: str, active: bool = True) -> GateState:
    return GateState(gate, active, None, covers)


def gate(name: str, *bundles: str, **kw) -> Gate:
    return Gate(name, f"gates/{name}.yaml", "why", bundles=bundles, **kw)


def test_a_gate_named_like_the_selector_is_removed_alone():
    gates = (state(gate("inc-1", "shop/*"), "shop/carts", "shop/orders"),
             state(gate("other", "shop/carts"), "shop/carts"))
    edits, refusals = resume_edits("inc-1", gates, [])
    assert [(e.gate, e.deletes) for e in edits] == [("inc-1", True)] and refusals == []


def test_only_the_gates_pause_wrote_for_the_selector_are_removed():
    gates = (state(gate("pause-shop", "shop/*", paused_for="shop/*"), "shop/carts",
                   "shop/orders"),
             state(gate("only-carts", "shop/c*"), "shop/carts"))
    edits, refusals = resume_edits("shop/*", gates, [CARTS, ORDERS])
    assert [(e.gate, e.deletes) for e in edits] == [("pause-shop", True)]
    # a hand-written gate that holds nothing but the selected bundles is still not yours
    assert [(r.gate, r.why) for r in refusals] == [
        ("only-carts", "holds shop/carts and was not written by `gitgate pause shop/*`")]
    assert "`gitgate resume only-carts` lifts it" in refusals[0].describe()


def test_no_gate_is_narrowed_and_every_other_holder_is_named():
    weekend = gate("weekend", "*", windows=(Window("0 18 * * 5", timedelta(hours=62)),))
    gates = (state(gate("list", "shop/carts", "guestbook"), "shop/carts", "guestbook"),
             state(gate("pause-shop", "shop/*", paused_for="shop/*"), "shop/carts",
                   "shop/orders"),
             state(weekend, "shop/carts", "shop/orders", "guestbook"))
    edits, refusals = resume_edits("shop/carts", gates, [CARTS])
    assert edits == []
    assert {r.gate: r.why for r in refusals} == {
        "list": "holds shop/carts and was not written by `gitgate pause shop/carts`",
        "pause-shop": "holds shop/carts and was not written by `gitgate pause shop/carts`",
        "weekend": "is a recurring freeze (windows) that holds shop/carts"}


def test_a_suspension_selected_by_labels_is_never_lifted_by_a_label_resume():
    """The reported case: `pause tier=backend`, then `resume tier=backend` must not lift the
    blue/green suspension of member2 that a team wrote for a backend bundle."""
    migration = gate("shop-payment-migration", "shop/payment", action=Action.SUSPEND,
                     clusters=("member2",))
    paused = gate("pause-tier-backend", match_labels={"tier": "backend"},
                  paused_for="tier=backend")
    gates = (state(migration, "shop/payment"),
             state(paused, "shop/payment", "guestbook"))
    payment = bundle("shop/payment", labels={"tier": "backend"})
    edits, refusals = resume_edits("tier=backend", gates, [payment, GUESTBOOK])
    assert [e.gate for e in edits] == ["pause-tier-backend"]
    assert [(r.gate, r.why) for r in refusals] == [
        ("shop-payment-migration",
         "suspends shop/payment and was not written by `gitgate pause tier=backend`")]


def test_inactive_gates_are_left_alone():
    weekend = gate("weekend", "*", windows=(Window("0 18 * * 5", timedelta(hours=62)),))
    gates = (state(weekend, "shop/carts", "guestbook", active=False),
             state(gate("pause-carts", "shop/carts", paused_for="shop/carts"), "shop/carts"))
    edits, refusals = resume_edits("shop/carts", gates, [CARTS])
    assert [e.gate for e in edits] == ["pause-carts"] and refusals == []
