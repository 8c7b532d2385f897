"""Which revision is live, in Karmada and per member cluster (issue 28, item 3): plain data."""

from __future__ import annotations

from gitgate.apply.inventory import Inventory
from gitgate.apply.legacyinventory import from_configmap, to_configmap
from gitgate.apply.liverevision import Live, after_write


def test_a_write_makes_its_revision_live_everywhere_dispatch_is_open():
    live = after_write(Live("r1", "d1"), "r2", "d2", None)
    assert live == Live("r2", "d2", ())


def test_a_suspended_cluster_keeps_what_it_ran_while_the_content_changes():
    live = after_write(Live("r1", "d1"), "r2", "d2", ("member2",))
    assert live.behind == (("member2", "r1"),)
    live = after_write(live, "r3", "d3", ("member2",))  # a second change: still r1 there
    assert live.revision == "r3" and live.behind == (("member2", "r1"),)
    live = after_write(live, "r4", "d3", ())  # its suspension lifts: it gets the templates
    assert live == Live("r4", "d3", ())


def test_a_new_revision_with_the_same_content_leaves_no_cluster_behind():
    live = after_write(Live("r1", "d1"), "r2", "d1", ("member2",))
    assert live.behind == ()


def test_suspending_every_cluster_and_then_one():
    live = after_write(Live("r1", "d1"), "r2", "d2", ("*",))
    assert live.behind == (("*", "r1"),)
    inventory = Inventory("b", applied_revision=live.revision, clusters_behind=live.behind)
    assert inventory.cluster_revision("member1") == "r1"
    live = after_write(live, "r3", "d3", ("member2",))  # member1 released, member2 still not
    assert live.behind == (("member2", "r1"),)
    inventory = Inventory("b", applied_revision=live.revision, clusters_behind=live.behind)
    assert (inventory.cluster_revision("member1"), inventory.cluster_revision("member2")) == \
        ("r3", "r1")


def test_a_first_deploy_to_a_suspended_cluster_runs_nothing_there():
    live = after_write(Live(), "r1", "d1", ("member2",))
    inventory = Inventory("b", applied_revision=live.revision, clusters_behind=live.behind)
    assert inventory.cluster_revision("member2") == "" and inventory.cluster_revision("m1") == "r1"


def test_the_record_survives_its_configmap_and_an_older_inventory_is_read_sensibly():
    kept = Inventory("b", revision="r3", digest="d3", verdict="held", applied_revision="r2",
                     applied_digest="d2", clusters_behind=(("member2", "r1"),))
    again = from_configmap(to_configmap(kept))
    assert (again.applied_revision, again.applied_digest, again.clusters_behind) == \
        ("r2", "d2", (("member2", "r1"),))
    older = to_configmap(Inventory("b", revision="r1", digest="d1", verdict="apply",
                                   last_applied="2026-01-01T00:00:00Z"))
    for key in ("appliedRevision", "appliedDigest"):
        del older["data"][key]
    assert from_configmap(older).applied_revision == "r1"
    older["data"]["verdict"] = "held"  # a held inventory from before: what is live is unknown
    assert from_configmap(older).applied_revision == ""
    broken = to_configmap(kept)
    broken["data"]["clustersBehind"] = "{not json"
    assert from_configmap(broken).cluster_revision("member1") == ""  # fail closed: unknown
