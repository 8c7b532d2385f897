"""`progression.liveowners` over plain data: which frozen bundle a live object's
`gitgate.io/bundle` label names, whether that bundle is in the plan, only on record, or
known by its name alone."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from gitgate.model import ObjectRef, ReasonKind, RenderedSource
from gitgate.plan import make_plan
from gitgate.progression.livefreeze import with_live_freezes
from gitgate.progression.liveowners import owner_freezes
from tests.support.objects import bundle, cm

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    bundle: str
    source: str
    labels: tuple[tuple[str, str], ...] = ()

    def by_ref(self) -> dict[ObjectRef, object]:
        return {}


def planned(*bundles, gates: dict[str, str] | None = None, pauses=None, records=None):
    rendered = tuple(RenderedSource(b.source, b.objects) for b in bundles)
    texts = {f"gates/{name}.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
             f"metadata: {{name: {name}}}\nspec: {{{spec}, reason: freeze {name}}}\n"
             for name, spec in (gates or {}).items()}
    plan = make_plan(rendered, texts, NOW, "rev")
    plan = with_live_freezes(replace(plan, pauses=pauses or {}), records or {}, pauses or {})
    return owner_freezes(plan, records or {})


def test_an_object_of_a_held_bundle_is_frozen_for_every_other_bundle_but_itself():
    freezes = planned(bundle("web", cm("web")), bundle("db", cm("db")),
                      gates={"g": "bundles: [web]"})
    assert freezes.any_for("db")
    holder, why = freezes.holder("web", "db")
    assert holder == "web" and why.file == "gates/g.yaml"
    assert freezes.holder("web", "web") is None
    assert freezes.holder("db", "web") is None  # open


def test_a_bundle_only_on_record_is_judged_by_its_record():
    records = {"old": Record("old", "apps/old", (("team", "shop"),))}
    freezes = planned(bundle("db", cm("db")), gates={"g": "selector: {matchLabels: {team: shop}}"},
                      records=records)
    holder, why = freezes.holder("old", "db")
    assert holder == "old" and why.kind is ReasonKind.GATE


def test_a_bundle_known_by_its_label_alone_is_judged_by_name_and_folder():
    by_gate = planned(bundle("db", cm("db")), gates={"g": "bundles: [gone]"})
    assert by_gate.holder("gone", "db")[1].file == "gates/g.yaml"
    assert by_gate.holder("other", "db") is None
    by_pause = planned(bundle("db", cm("db")), pauses={"apps/gone": "incident"})
    holder, why = by_pause.holder("apps-gone", "db")  # the bundle of folder apps/gone
    assert holder == "apps-gone" and why.kind is ReasonKind.PAUSE_FILE
    assert why.file == "apps/gone/PAUSE"


def test_nothing_frozen_asks_for_no_wider_read():
    freezes = planned(bundle("web", cm("web")), bundle("db", cm("db")))
    assert not freezes.any_for("db")
    assert freezes.holder("web", "db") is None
