"""`progression.livetakeover` over plain data: a propagation policy of one bundle may not
select an object another bundle has live and no bundle has in Git."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from gitgate.apply.inventory import Entry
from gitgate.errors import Reason
from gitgate.model import RenderedSource, Verdict
from gitgate.plan import make_plan
from gitgate.progression.livetakeover import with_live_takeovers
from tests.support.objects import bundle, cm

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    bundle: str
    source: str
    entries: tuple[Entry, ...]
    labels: tuple[tuple[str, str], ...] = ()
    instance: str = "default"

    def by_ref(self):
        return {e.ref: e for e in self.entries}


def pp(selector: dict) -> dict:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "x", "namespace": "ns"},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap",
                                            **selector}],
                     "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}}


def plan_of(*bundles):
    return make_plan(tuple(RenderedSource(b.source, b.objects) for b in bundles), {}, NOW, "r")


def judged(policy: dict, *entries: Entry):
    plan = plan_of(bundle("x", cm("x"), policy), bundle("web", cm("web")))
    out = with_live_takeovers(plan, {"web": Record("web", "web", entries)})
    return {b.bundle.name: b.verdict for b in out.bundles}


def test_a_policy_naming_another_bundles_leftover_fails_its_bundle():
    left = Entry("v1", "ConfigMap", "ns", "old", "h", labels=(("app", "web"),))
    found = judged(pp({"name": "old"}), left)
    assert found["x"].verdict is Verdict.FAILED
    assert found["x"].reasons[0].gate == Reason.POLICY_TAKEOVER
    assert "ConfigMap ns/old, live in bundle web" in found["x"].reasons[0].reason
    assert found["web"].verdict is not Verdict.FAILED


def test_labels_decide_where_the_record_knows_them_and_fail_closed_where_not():
    by_label = pp({"labelSelector": {"matchLabels": {"app": "web"}}})
    other = Entry("v1", "ConfigMap", "ns", "old", "h", labels=(("app", "shop"),))
    assert judged(by_label, other)["x"].verdict is not Verdict.FAILED
    unknown = Entry("v1", "ConfigMap", "ns", "old", "h")  # labels None: an earlier release
    assert judged(by_label, unknown)["x"].verdict is Verdict.FAILED


def test_what_is_in_git_or_the_bundles_own_is_left_to_the_render_checks():
    in_git = Entry("v1", "ConfigMap", "ns", "x", "h", labels=())  # the bundle's own in Git
    assert judged(pp({"name": "x"}), in_git)["x"].verdict is not Verdict.FAILED
    plan = plan_of(bundle("x", cm("x"), pp({"name": "gone"})))
    own = Record("x", "x", (Entry("v1", "ConfigMap", "ns", "gone", "h", labels=()),))
    assert all(b.verdict.verdict is not Verdict.FAILED
               for b in with_live_takeovers(plan, {"x": own}).bundles)  # its own leftover
