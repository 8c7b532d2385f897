"""Which gates `gitgate resume` removes, narrows or refuses: plain gates and bundles in, edits
and refusals out."""

from __future__ import annotations

from datetime import timedelta

from gitgate.gate.evaluate import GateState
from gitgate.gitops.resume import resume_edits
from gitgate.model import Gate, Window
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


def test_pause_gates_for_the_selector_and_gates_holding_nothing_else_are_removed():
    gates = (state(gate("pause-shop", "shop/*", paused_for="shop/*"), "shop/carts",
                   "shop/orders"),
             state(gate("only-carts", "shop/c*"), "shop/carts"))
    edits, refusals = resume_edits("shop/*", gates, [CARTS, ORDERS])
    assert sorted(e.gate for e in edits if e.deletes) == ["only-carts", "pause-shop"]
    assert refusals == []


def test_a_name_list_is_narrowed_a_glob_and_a_recurring_freeze_are_refused():
    weekend = gate("weekend", "*", windows=(Window("0 18 * * 5", timedelta(hours=62)),))
    gates = (state(gate("list", "shop/carts", "guestbook"), "shop/carts", "guestbook"),
             state(gate("pause-shop", "shop/*", paused_for="shop/*"), "shop/carts",
                   "shop/orders"),
             state(weekend, "shop/carts", "shop/orders", "guestbook"))
    edits, refusals = resume_edits("shop/carts", gates, [CARTS])
    assert [(e.gate, e.remove_bundles) for e in edits] == [("list", ("shop/carts",))]
    assert {r.gate: r.why for r in refusals} == {
        "pause-shop": "covers shop/carts through a glob or labels that also cover shop/orders",
        "weekend": "is a recurring freeze (windows) that also covers guestbook, shop/orders"}
    assert "gitgate resume weekend" in refusals[1].describe()


def test_inactive_gates_are_left_alone():
    weekend = gate("weekend", "*", windows=(Window("0 18 * * 5", timedelta(hours=62)),))
    gates = (state(weekend, "shop/carts", "guestbook", active=False),
             state(gate("pause-carts", "shop/carts", paused_for="shop/carts"), "shop/carts"))
    edits, refusals = resume_edits("shop/carts", gates, [CARTS])
    assert [e.gate for e in edits] == ["pause-carts"] and refusals == []
